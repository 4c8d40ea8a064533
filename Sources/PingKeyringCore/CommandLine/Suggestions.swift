/// "did you mean …?": the known word closest to a mistyped one.
enum Suggestion {
    /// The candidate closest to `word` by ``distance(_:_:)`` (case ignored), when it is close
    /// enough to be a typo: at most one edit per three characters of `word`, and at least one.
    /// Ties go to the earliest candidate.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = max(1, word.count / 3)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = distance(word.lowercased(), candidate.lowercased())
            if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// `; did you mean 'list'?`, or `""` when nothing is close.
    static func didYouMean(_ word: String, among candidates: [String], prefix: String = "") -> String {
        closest(to: word, among: candidates).map { "; did you mean '\(prefix)\($0)'?" } ?? ""
    }

    /// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
    /// two neighbouring characters (`lsit` → `list` is one edit) each count one.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        // rows[i][j]: the distance between a's first i and b's first j characters.
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }
}
