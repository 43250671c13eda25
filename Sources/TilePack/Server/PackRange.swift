/// Which bytes of a pack or delta file a request gets: HTTP `Range` (RFC 9110 §14) with
/// `If-Range`, for one file of known size and strong ETag. What lets a download resume from
/// its last byte.
///
/// - `bytes=a-b`, `bytes=a-`, `bytes=-n`: one range, clamped to the file (`b` past the end
///   means the end; a suffix longer than the file means the whole file) → 206.
/// - A first byte at or past the end, or `bytes=-0` → 416 (`Content-Range: bytes */SIZE`).
/// - Several ranges (`bytes=0-1,5-9`) → 200 and the whole file: RFC 9110 lets a server ignore
///   `Range`, and a downloader asks for one range only; multipart bodies are not made.
/// - A `Range` that does not parse, another unit, or `b < a` → ignored (200, whole file), as
///   RFC 9110 says of an invalid range.
/// - `If-Range` with an entity tag: the range is honoured only when it is our strong ETag
///   (a weak tag never matches); with a date (we send no `Last-Modified`) it never matches.
///   Not matching → 200, the whole file, so a client resuming a file that changed starts over
///   instead of splicing two versions.
///
/// Cost: a scan of the header (at most ``maxHeaderBytes``); no allocation beyond the splits.
public enum PackRange: Sendable, Equatable {
    /// 200: every byte.
    case whole
    /// 206: bytes `first...last` (inclusive, within the file).
    case partial(first: Int64, last: Int64)
    /// 416: no byte of the file is in the range.
    case unsatisfiable

    /// A `Range` header longer than this is ignored (a real one is under 50 bytes).
    static let maxHeaderBytes = 1024

    /// The bytes to send for `range` and `ifRange` (raw header values, nil when absent) of a
    /// file of `size` bytes (> 0) whose strong ETag is `etag` (quoted).
    public static func resolve(range: String?, ifRange: String?, size: Int64, etag: String) -> PackRange {
        guard let range, size > 0 else { return .whole }
        if let ifRange {
            let tag = ifRange.utf8.count <= maxHeaderBytes ? ifRange.trimmingWhitespace() : ""
            // A strong comparison: W/"…" or a date (no quote) never matches.
            guard tag.hasPrefix("\""), tag == etag[...] else { return .whole }
        }
        return parse(range, size: size)
    }

    /// `Range` alone (no `If-Range`).
    static func parse(_ header: String, size: Int64) -> PackRange {
        guard header.utf8.count <= maxHeaderBytes else { return .whole }
        let value = header.trimmingWhitespace()
        guard let eq = value.firstIndex(of: "="), value[..<eq].trimmingWhitespace().lowercased() == "bytes" else {
            return .whole
        }
        let specs = value[value.index(after: eq)...].split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count == 1, let spec = specs.first?.trimmingWhitespace(), let dash = spec.firstIndex(of: "-") else {
            return .whole
        }
        let head = spec[..<dash], tail = spec[spec.index(after: dash)...]
        if head.isEmpty {
            // bytes=-n: the last n bytes.
            guard let n = number(tail) else { return .whole }
            if n == 0 { return .unsatisfiable }
            return .partial(first: n >= size ? 0 : size - n, last: size - 1)
        }
        guard let first = number(head) else { return .whole }
        var last = size - 1
        if !tail.isEmpty {
            guard let b = number(tail) else { return .whole }
            guard b >= first else { return .whole }  // invalid: ignored
            last = min(b, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .partial(first: first, last: last)
    }

    /// A byte position: 1…18 ASCII digits (below 10^18, so no overflow), else nil.
    static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int64(text)
    }
}

extension PackRange {
    /// How a file of `size` bytes answers `range`: the status, the bytes to send and the
    /// `Content-Range` header, or the 416 response. What pack downloads and `.pmtiles` files
    /// share.
    enum Answer {
        case bytes(status: Int, first: Int64, length: Int64, headers: [(String, String)])
        case refused(ServedResponse)
    }

    /// See ``Answer``. - Cost: O(length of `range`).
    static func answer(range: String?, ifRange: String?, size: Int64, etag: String) -> Answer {
        switch resolve(range: range, ifRange: ifRange, size: size, etag: etag) {
        case .whole:
            return .bytes(status: 200, first: 0, length: size, headers: [])
        case .partial(let a, let b):
            return .bytes(
                status: 206, first: a, length: b - a + 1, headers: [("Content-Range", "bytes \(a)-\(b)/\(size)")])
        case .unsatisfiable:
            return .refused(
                .error(
                    416, kind: "rangeNotSatisfiable",
                    message: "range \(TileService.shown(range ?? "")) is outside the file's \(size) bytes"
                )
                .adding([("Content-Range", "bytes */\(size)"), ("Accept-Ranges", "bytes")]))
        }
    }
}
