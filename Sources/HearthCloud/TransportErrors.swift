import AsyncHTTPClient
import HearthProviders
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Maps transport failures (AsyncHTTPClient, NIO, TLS, timeouts, cancellation) to ``ProviderError``.
enum TransportErrors {
    static func classify(_ error: any Error, provider: String, timeouts: CloudTimeouts) -> ProviderError {
        if let error = error as? ProviderError { return error }
        if error is CancellationError {
            return ProviderError(.cancelled, provider: provider, message: "The request was cancelled.", underlying: error)
        }
        if let error = error as? IdleTimeoutError {
            return ProviderError(
                .timeout, provider: provider,
                message: "The server sent nothing for \(error.timeout); the request was abandoned. "
                    + "Raise CloudTimeouts.idle if the model needs longer before it answers.",
                underlying: error)
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled, .requestStreamCancelled:
                return ProviderError(.cancelled, provider: provider, message: "The request was cancelled.", underlying: error)
            case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
                return ProviderError(
                    .timeout, provider: provider,
                    message: "Could not connect within \(timeouts.connect). Check the network and the base URL.",
                    underlying: error)
            case .readTimeout, .deadlineExceeded:
                return ProviderError(
                    .timeout, provider: provider, message: "The server stopped answering.", underlying: error)
            case .invalidURL, .emptyHost, .emptyScheme:
                return ProviderError(
                    .invalidRequest, provider: provider,
                    message: "The endpoint URL is not valid (\(error)). Check the provider's base URL.",
                    underlying: error)
            default:
                return ProviderError(
                    .network, provider: provider,
                    message: "The connection failed (\(error)). Check the network; the request can be retried.",
                    underlying: error)
            }
        }
        if error is NIOSSLError || error is BoringSSLError {
            return ProviderError(
                .network, provider: provider,
                message: "The TLS connection failed (\(error)). Check the system clock, proxy and certificates.",
                underlying: error)
        }
        if error is ChannelError {
            return ProviderError(
                .network, provider: provider,
                message: "The connection closed unexpectedly (\(error)). Check the network; the request can be retried.",
                underlying: error)
        }
        if error is DecodingError {
            return ProviderError(
                .decoding, provider: provider,
                message: "The server's reply did not have the expected shape (\(error)).", underlying: error)
        }
        return ProviderError(
            .network, provider: provider,
            message: "The connection failed (\(error)). Check the network; the request can be retried.",
            underlying: error)
    }
}
