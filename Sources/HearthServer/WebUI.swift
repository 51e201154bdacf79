import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension HearthServer {
    /// The chat page at `/` and `/chat` (``WebUIPage/html``): one self-contained page served
    /// from the binary. Its Content-Security-Policy lets it talk to this server only — no
    /// script, style, font, image or connection from any other host — so it works offline and
    /// cannot leak a conversation.
    func webUIRoutes(_ router: some RouterMethods<ServerRequestContext>) {
        let page = ByteBuffer(string: WebUIPage.html)
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-cache",
            .contentSecurityPolicy:
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; "
                + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ]
        Self.set(&headers, "x-content-type-options", "nosniff")
        Self.set(&headers, "referrer-policy", "no-referrer")
        for path in ["/", "/chat"] {
            router.get(RouterPath(path)) { [headers] _, _ in Response(status: .ok, headers: headers, body: .init(byteBuffer: page)) }
        }
    }
}
