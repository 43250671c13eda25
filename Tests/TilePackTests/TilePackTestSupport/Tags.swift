import Testing

extension Tag {
    /// Suites whose code under test runs on many threads or tasks at once: the tile store, the
    /// region store, the server and the build pipeline. `Scripts/sanitize thread` (and .ci/run)
    /// runs these under ThreadSanitizer, filtered by suite name (docs/SANITIZERS.md).
    @Tag public static var concurrent: Self
}
