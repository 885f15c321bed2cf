import Foundation
@testable import TrackedModels

/// Moving windows: the program moves a live list's offset and limit at once, inside a
/// transaction between its changes, several times in one burst, or from a feed handler while
/// a change is delivered. The checks compare each list with a fresh fetch in the list's
/// window, and its `onChange` differences with what it holds.
extension Harness {
    /// A window the program asks for: offsets past the rows, no limit, a limit of 0.
    static func window(_ seed: UInt64) -> (offset: Int, limit: Int?) {
        (Int(seed % 9), seed / 9 % 4 == 0 ? nil : Int(seed / 36 % 7))
    }

    static func describe(_ window: (offset: Int, limit: Int?)) -> String {
        "offset \(window.offset), limit \(window.limit.map { "\($0)" } ?? "nil")"
    }

    /// One of the live lists the program holds, its fixed queries' or its generated ones'.
    private func liveList(_ a: UInt64) -> (name: String, results: FetchedResults<Item>)? {
        let fixed = lists.map { (name: "live list (\(queries[$0.query].name))", results: $0.results) }
        let generated = generatedLists.compactMap { $0 }.map { (name: "generated live list", results: $0) }
        let all = fixed + generated
        return all.isEmpty ? nil : all[Int(a % UInt64(all.count))]
    }

    func moveLiveWindow(_ a: UInt64, _ b: UInt64) throws {
        guard let (name, results) = liveList(a) else { return }
        let store = try live
        let window = Self.window(b)
        let move = { try results.moveWindow(offset: window.offset, limit: window.limit) }
        switch a / 64 % 4 {
        case 0:
            if b % 5 == 0 { try refuseNegativeWindow(of: results, name) }
            note("move the window of the \(name) to \(Self.describe(window))")
            try move()
        case 1:
            note("move the window of the \(name) to \(Self.describe(window)), inside a transaction between two changes:")
            try transaction(a, b, depth: 0, body: {
                try self.assign(a >> 8, b >> 8)
                try move()
                try self.increment(b >> 16, a >> 16)
            })
        case 2:
            let second = Self.window(b >> 12)
            note("move the window of the \(name) to \(Self.describe(window)), then \(Self.describe(second)), in one transaction that changes nothing")
            try store.transaction {
                try move()
                try results.moveWindow(offset: second.offset, limit: second.limit)
            }
        default:
            // From a feed handler (before or after the list hears the change), or from one of
            // the list's own observers while it is told a change.
            let fromTheList = a / 256 % 2 == 0
            note("move the window of the \(name) to \(Self.describe(window)) from \(fromTheList ? "an onChange handler of the list" : "a feed handler"), while the next change is delivered:")
            var moved = false
            let token = try store.subscribe(to: .table(Item.self)) { _ in
                guard !fromTheList, !moved else { return }
                moved = true
                try? move()
            }
            let subscription = results.onChange { _ in
                guard fromTheList, !moved else { return }
                moved = true
                try? move()
            }
            defer {
                token.cancel()
                subscription.cancel()
            }
            try assign(a >> 8, b >> 8)
            try increment(b >> 16, a >> 16)
        }
    }

    /// A negative offset or limit is refused, naming it, and the window stays where it was.
    private func refuseNegativeWindow(of results: FetchedResults<Item>, _ name: String) throws {
        let before = (results.fetchOffset, results.fetchLimit, results.keys)
        for (offset, limit, expected) in [(-1, Optional(3), "fetchOffset is -1"), (0, -2, "fetchLimit is -2")] {
            do {
                try results.moveWindow(offset: offset, limit: limit)
                throw Divergence(message: "the \(name) took a window at offset \(offset), limit \(limit ?? 0)")
            } catch let error as StoreError where error.code == .unsupportedPredicate {
                guard error.message.contains(expected) else {
                    throw Divergence(message: "the refusal of a window at offset \(offset), limit \(limit ?? 0) says: \(error.message)")
                }
            }
        }
        guard before == (results.fetchOffset, results.fetchLimit, results.keys) else {
            throw Divergence(message: "a refused window moved the \(name)")
        }
    }
}
