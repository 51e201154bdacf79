import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The request context of Hearth's routes: Hummingbird's basic context, the request's
/// connection (so a generation learns that its client went away), and
/// what Hearth's middleware establishes before a handler runs: the request's id and start, the
/// authenticated caller and the body read for it.
///
/// An app that mounts Hearth's routes (``HearthServer/addRoutes(to:atPath:)``) builds its
/// router over this context — `Router(context: HearthRequestContext.self)` — and its own routes
/// and middleware use it as they would `BasicRequestContext`.
public struct HearthRequestContext: RequestContext {
    /// Hummingbird's per-request storage (logger, parameters, allocator).
    public var coreContext: CoreRequestContextStorage
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
    /// The request's path below the prefix Hearth's routes are mounted at (set by
    /// ``FrontMiddleware``): what the middleware matches routes by (`/v1/messages`, `/health`).
    var routePath = ""

    /// Creates the context of a request that arrived on `source`'s connection.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// The name the server's code has used for ``HearthRequestContext``.
typealias ServerRequestContext = HearthRequestContext
