extension StringProtocol {
    /// The text without leading and trailing whitespace (`Character.isWhitespace`: spaces, tabs,
    /// line breaks, Unicode spaces): tilepack's one trimming helper, for option values, metadata
    /// lists and HTTP header fields alike. Why not Foundation's `trimmingCharacters(in:)`: the
    /// library layers avoid Foundation, and FoundationEssentials lacks it. XML's own rule (four
    /// ASCII bytes) stays in the XML reader (`XMLElement.trimmedText`).
    /// - Cost: O(whitespace trimmed); the result shares the text's storage.
    package func trimmingWhitespace() -> SubSequence {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
