import Foundation

/// A one-line progress bar on stderr, shown only when stderr is a terminal and the work is
/// large enough to be worth watching.
final class ProgressBar {
    private let total: Int
    private let label: String
    private let isVisible: Bool
    private var shownPercent = -1

    init(total: Int, label: String, threshold: Int = 50_000) {
        self.total = total
        self.label = label
        isVisible = total >= threshold && isatty(STDERR_FILENO) == 1
    }

    func update(_ done: Int) {
        guard isVisible else { return }
        let percent = done * 100 / max(total, 1)
        guard percent != shownPercent else { return }
        shownPercent = percent
        let filled = percent / 4
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 25 - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(percent)%".utf8))
    }

    func finish(note: String) {
        guard isVisible else { return }
        FileHandle.standardError.write(Data("\n\(note)…\n".utf8))
    }
}
