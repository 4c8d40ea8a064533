/// Lays out for a terminal the library messages that end with a list.
///
/// The library's `collectionNotFound` message says "Pass one of the collections below" and ends
/// with `Collections: /org/…/login (Login), /org/…/session (session).` on the same line; printed
/// as it is, nothing is below. Until the library hands the list over separately, the human output
/// puts that list on lines of its own under the message. `--json` keeps the message as it is.
enum MessageLayout {
    /// The marker that starts the list in the library's message.
    static let listMarker = " Collections: "

    /// The message without its trailing list, and the list's entries; nil when `message` does not
    /// end with such a list (then it is shown as it is).
    static func split(_ message: String) -> (head: String, entries: [String])? {
        guard let marker = message.ranges(of: listMarker).last, message.hasSuffix(".") else {
            return nil
        }
        let list = message[marker.upperBound...].dropLast()
        let head = String(message[..<marker.lowerBound])
        if list == "none" { return (head, []) }
        // Entries are object paths with a label: `/path (label)`, separated by ", ".
        let entries = list.split(separator: ", /", omittingEmptySubsequences: false).enumerated().map {
            $0.offset == 0 ? String($0.element) : "/" + $0.element
        }
        guard entries.allSatisfy({ $0.hasPrefix("/") }) else { return nil }
        return (head, entries)
    }

    /// `message` with its trailing list of collections, if any, on lines of its own: a
    /// `Collections:` line and one indented line per entry, each line after the first starting
    /// with `indent` spaces.
    static func terminalText(_ message: String, indent: Int = 0) -> String {
        guard let (head, entries) = split(message) else { return message }
        let margin = String(repeating: " ", count: indent)
        let lines = entries.isEmpty ? ["  (none)"] : entries.map { "  " + $0 }
        return head + "\n" + margin + "Collections:" + lines.map { "\n" + margin + $0 }.joined()
    }
}
