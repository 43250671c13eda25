import TilePackCore

/// The server could not start listening: `port 8080 is in use` rather than NIO's
/// `bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`. An environment failure
/// (exit 1): another process holds the port.
public struct ServerStartError: TilePackError, Equatable {
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// `bind` failed with `EADDRINUSE`.
        public static let portInUse = Code("portInUse")
        /// `bind` failed otherwise (no such address, not permitted).
        public static let cannotBind = Code("cannotBind")
    }

    public let code: Code
    /// Empty: the detail names the port (`port 8080 is in use`).
    public let subject: String
    public let detail: String
    public let cause: (any Error)?
    public var category: TilePackErrorCategory { .environment }

    public init(_ code: Code, detail: String, cause: (any Error)? = nil) {
        self.code = code
        self.subject = ""
        self.detail = detail
        self.cause = cause
    }
}
