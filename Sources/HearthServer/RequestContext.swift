import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The request context of the server's routes: Hummingbird's basic context, the request's
/// connection (so a generation learns that its client went away, ``ConnectionWatcher``), and
/// what the middleware established before the handler runs: the request's id and start, the
/// authenticated caller and the body read for it.
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    let channel: any Channel
    /// The id echoed in `x-request-id` and written to the log (random, not sequential).
    var requestID = ""
    /// When the server started on the request.
    var started = ContinuousClock.now
    /// Who made the request (set by ``AuthenticationMiddleware``; nil on `/health` and `/live`).
    var caller: Caller?
    /// The request body, read once after the headers authenticated the caller.
    var body = Data()
    /// `x-ratelimit-*` headers for the response (set by ``RateLimitMiddleware``).
    var quotaHeaders = HTTPFields()
    /// Where later stages tell ``FrontMiddleware`` what it logs (set by it).
    var note: RequestNote?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
