/// The HTTP a device needs to fetch packs, and nothing more: GET (with a streamed body) and
/// HEAD. Small on purpose, so an app implements it over `URLSession` (`bytes(for:)`) and the
/// CLI over AsyncHTTPClient, and tests over a directory with a fake that breaks on demand. No
/// networking types cross it: the region store does not link an HTTP stack.
///
/// Conformers follow redirects or not as they like (the installer treats any status other than
/// 200/206/304/416 and the JSON errors of 401/403/404 as a network failure), apply their own
/// connect and read timeouts, and throw any error for a connection that fails; the installer
/// reports it as ``PackError/Code/network``.
public protocol PackTransport: Sendable {
    /// `GET url` with `headers`: the status and headers as soon as they arrive, the body as a
    /// stream the caller reads at its own pace (a conformer must not buffer it whole).
    func get(url: String, headers: [(String, String)]) async throws -> PackResponse

    /// `HEAD url` with `headers`: the status and headers; the body is empty.
    func head(url: String, headers: [(String, String)]) async throws -> PackResponse
}

/// An HTTP answer: status, headers (names compared case-insensitively) and a body of byte chunks.
public struct PackResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: PackBody

    public init(status: Int, headers: [(String, String)], body: PackBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (case-insensitive), trimmed.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        guard let value = headers.first(where: { $0.0.lowercased() == lower })?.1 else { return nil }
        return String(value.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// A response body: an `AsyncSequence` of byte chunks, read once. Wraps whatever sequence a
/// transport has (`URLSession.AsyncBytes` chunked, AsyncHTTPClient's `ByteBuffer`s mapped to
/// arrays) behind one concrete type, so the protocol needs no generics.
///
/// Cost: one closure call per chunk; chunks are as large as the transport makes them.
public struct PackBody: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = any Error

    private let make: @Sendable () -> Iterator

    /// A body read from `sequence`.
    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == [UInt8] {
        make = {
            let box = IteratorBox(sequence.makeAsyncIterator())
            return Iterator { try await box.next() }
        }
    }

    /// A body whose chunks come from `next` (nil: the end).
    public init(next: @escaping @Sendable () async throws -> [UInt8]?) {
        make = { Iterator(next: next) }
    }

    /// No body.
    public static let empty = PackBody(next: { nil })

    public func makeAsyncIterator() -> Iterator { make() }

    public struct Iterator: AsyncIteratorProtocol {
        let nextChunk: () async throws -> [UInt8]?

        init(next: @escaping () async throws -> [UInt8]?) { nextChunk = next }

        public mutating func next() async throws -> [UInt8]? { try await nextChunk() }
    }

    /// Holds a sequence's iterator so a closure can advance it (an iterator is a value type).
    private final class IteratorBox<I: AsyncIteratorProtocol> where I.Element == [UInt8] {
        var iterator: I
        init(_ iterator: I) { self.iterator = iterator }
        func next() async throws -> [UInt8]? {
            var it = iterator
            defer { iterator = it }
            return try await it.next()
        }
    }

    /// At most `limit` bytes of the body, for error documents and listings; nil when it has
    /// more (the rest is not read).
    /// - Cost: memory of at most `limit` bytes plus one chunk.
    public func collect(limit: Int) async throws -> [UInt8]? {
        var out: [UInt8] = []
        for try await chunk in self {
            guard chunk.count <= limit - out.count else { return nil }
            out += chunk
        }
        return out
    }
}
