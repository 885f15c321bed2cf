import Foundation
@testable import TrackedModels

/// A feed of one scope that a program subscribed to at some step (inside transactions too).
/// What it must hear is what the harness's feed of the whole table heard (itself checked
/// against the reference), narrowed to the scope: exactly those events, in that order, with
/// the columns the subscriber asked for. A feed of an item's children must hear whenever the
/// rows linking to it changed.
final class ScopedFeed {
    enum Scope: CustomStringConvertible {
        case cells(key: Int64, columns: [Int])
        case row(Int64)
        case columns([Int])
        case membership
        case table
        case children(Int64)

        var description: String {
            func names(_ columns: [Int]) -> String { columns.map { "\(Item.Column(rawValue: $0)!)" }.joined(separator: ", ") }
            switch self {
            case .cells(let key, let columns): return ".row(\(key), \(names(columns)))"
            case .row(let key): return ".row(\(key))"
            case .columns(let columns): return ".column(\(names(columns)))"
            case .membership: return ".membership"
            case .table: return ".table"
            case .children(let key): return ".children(of: \(key), \\.linkedFrom)"
            }
        }
    }

    let scope: Scope
    var token: FeedToken?
    /// For a feed subscribed as `store.changes(_:)`: the task that takes its stream's events
    /// into ``heard``; cancelling it ends the stream, and with it the subscription.
    var streaming: Task<Void, Never>?
    /// What it heard since the last check.
    var heard: [ChangeEvent] = []
    /// How many of the step's events of the table's feed came before the subscription.
    var from: Int
    /// For a feed of children: how many rows linked to the item, and which keyed ones, at the
    /// last check.
    var linking: (count: Int, keys: Set<Int64>)?

    init(scope: Scope, from: Int) {
        self.scope = scope
        self.from = from
    }

    /// The event a subscriber of this scope hears of one the table's feed heard; nil for none.
    func narrowed(_ event: ChangeEvent) -> ChangeEvent? {
        if event.kind == .reset { return event }
        let key: Int64? = if case .integer(let key) = event.key { key } else { nil }
        func only(_ columns: [Int]) -> ChangeEvent? {
            let changes = event.changes.filter { columns.contains($0.index) }
            guard !changes.isEmpty else { return nil }
            return ChangeEvent(table: event.table, key: event.key, kind: event.kind, changes: changes, origin: event.origin)
        }
        switch scope {
        case .table: return event
        case .membership: return event.kind == .insert || event.kind == .delete ? event : nil
        case .row(let row): return key == row ? event : nil
        case .cells(let row, let columns): return key == row ? only(columns) : nil
        case .columns(let columns): return only(columns)
        case .children: return nil
        }
    }
}

extension Harness {
    /// The most feeds a program keeps besides the table's.
    static let maximumFeeds = 6

    /// Subscribes to a generated scope: a row (some columns, or all), an object, columns of
    /// every row, the table's membership, the whole table, or an item's children.
    func subscribeFeed(_ a: UInt64, _ b: UInt64) throws {
        guard feeds.count < Self.maximumFeeds else { return }
        let store = try live
        let shownKeys = reference.shownRows.keys.sorted()
        let key = shownKeys.isEmpty || b % 5 == 0 ? Values.key(seed: b) : shownKeys[Int(b / 5 % UInt64(shownKeys.count))]
        let columns = Item.Column.allCases.filter { b >> (8 + $0.rawValue) & 1 == 1 }.map(\.rawValue)
        let chosen = columns.isEmpty ? [Item.Column.count.rawValue] : columns
        let keyPaths = chosen.map { Item.Column(rawValue: $0)!.keyPath }
        let held = objects.keys.sorted()
        let object = held.isEmpty ? nil : objects[held[Int(b / 3 % UInt64(held.count))]]
        let scope: ScopedFeed.Scope
        let feedScope: FeedScope<Item>
        var writes = false
        switch a % 8 {
        case 0:
            scope = .cells(key: key, columns: chosen)
            switch keyPaths.count {
            case 1: feedScope = .row(key, keyPaths[0])
            case 2: feedScope = .row(key, keyPaths[0], keyPaths[1])
            default: feedScope = .row(key, keyPaths[0], keyPaths[1], keyPaths[2])
            }
        case 1:
            scope = .row(key)
            feedScope = .row(key, of: Item.self)
        case 2:
            guard let object, let id = object.id else { return }
            scope = b % 2 == 0 ? .row(id) : .cells(key: id, columns: [chosen[0]])
            feedScope = b % 2 == 0 ? .object(object) : .object(object, keyPaths[0])
        case 3 where b >> 20 & 3 == 0:
            // A quarter of the feeds of columns write while they are told (see
            // ``titleHeard(_:)``): what they write is delivered after what they heard.
            scope = .columns([Item.Column.count.rawValue])
            feedScope = .column(\Item.count)
            writes = true
        case 3:
            scope = .columns(chosen)
            feedScope = keyPaths.count == 1 ? .column(keyPaths[0]) : .column(keyPaths[0], keyPaths[1])
        case 4:
            scope = .membership
            feedScope = .membership(Item.self)
        case 5:
            scope = .table
            feedScope = .table(Item.self)
        default:
            // A new item has no children to watch until it has its key: refused, saying so.
            if a % 16 == 15, let new = newObjects.values.first(where: { $0.id == nil && isManaged($0) }) {
                do {
                    _ = try store.subscribe(to: .children(of: new, \.linkedFrom)) { _ in }
                    throw Divergence(message: "a feed of the children of an item waiting for its key was made")
                } catch let error as StoreError where error.code == .notAttached {
                    return
                }
            }
            guard let object, let id = object.id else { return }
            scope = .children(id)
            feedScope = .children(of: object, \.linkedFrom)
        }
        // The scope as the store reads it: with two or three key paths, the first ones named.
        let feed = ScopedFeed(scope: Self.asSubscribed(scope), from: events.count)
        // Inside a transaction the rows it links are not yet what subscribers will be told
        // (nothing, if it throws): the next check takes the first count.
        if case .children(let parent) = scope, transactionDepth == 0 { feed.linking = linking(to: parent) }
        // A quarter as an AsyncStream (of any scope but children, whose check needs what was
        // heard by the check's start).
        let isChildren = if case .children = scope { true } else { false }
        let asStream = b >> 16 & 3 == 0 && !isChildren && !writes
        note("subscribe to \(feed.scope)\(asStream ? " as a stream" : "")\(writes ? ", setting the title of each row whose count it hears of" : "")")
        let subscriptions = store.feedSubscriptionCount
        if asStream {
            let stream = try store.changes(feedScope)
            guard store.feedSubscriptionCount == subscriptions + 1 else {
                throw Divergence(message: "the store counts \(store.feedSubscriptionCount) feeds after a stream's subscription; it counted \(subscriptions) before")
            }
            feed.streaming = Task { [weak feed] in
                for await event in stream { feed?.heard.append(event) }
            }
            feeds.append(feed)
            return
        }
        let token = try store.subscribe(to: feedScope) { [weak feed, weak self] event in
            feed?.heard.append(event)
            if writes { self?.titleHeard(event) }
        }
        guard token.isActive, store.feedSubscriptionCount == subscriptions + 1 else {
            throw Divergence(message: "a new feed is \(token.isActive ? "" : "not ")active and the store counts \(store.feedSubscriptionCount) feeds; it counted \(subscriptions) before")
        }
        feed.token = token
        feeds.append(feed)
    }

    /// What a writing feed's handler does with an event: a row whose count changed gets the
    /// title "heard N" (N the new count), through its object, while the store is delivering.
    /// The store takes the write as any other (it is delivered after the event being
    /// delivered, and stored); the reference takes it once the program's step has recorded
    /// its own change (``recordHandlerWrites()``), which came first.
    func titleHeard(_ event: ChangeEvent) {
        guard event.kind == .update, let count = event.change(of: \Item.count)?.new, case .integer(let key) = event.key,
              let object = objects[key], let row = row(of: object)
        else { return }
        let title = "heard \(count)"
        let before = object._$values()[Item.Column.title.rawValue]
        note("  a handler sets \(row).title \"\(title)\"")
        object.title = title
        if !Values.same(before, .text(title)) { handlerWrites.append((object, .text(title))) }
    }

    /// Records in the reference what handlers wrote while the store delivered the program's
    /// last change, in the order they wrote it: writes through objects the step left managed.
    /// (The handler runs while the step is delivered, after the store made its change: an
    /// object a discarded insert detached is detached when the handler writes through it,
    /// though the reference detaches it only once the step has recorded the discard.)
    func recordHandlerWrites() {
        let writes = handlerWrites
        handlerWrites = []
        for (object, value) in writes where isManaged(object) {
            guard let row = row(of: object) else { continue }
            reference.write(.set(value), column: Item.Column.title.rawValue, of: row)
        }
    }

    /// A scope with the columns the generated `FeedScope` names (at most three for a row, two
    /// for columns, as `subscribeFeed` builds them).
    private static func asSubscribed(_ scope: ScopedFeed.Scope) -> ScopedFeed.Scope {
        switch scope {
        case .cells(let key, let columns) where columns.count > 3: .cells(key: key, columns: Array(columns.prefix(3)))
        case .columns(let columns) where columns.count > 2: .columns(Array(columns.prefix(2)))
        default: scope
        }
    }

    /// Cancels one of the feeds: it hears nothing more.
    func cancelFeed(_ a: UInt64) async throws {
        // Now and then a live list's onChange instead: it must tell nothing more.
        if a % 4 == 0, let list = lists.first(where: { $0.toldWhenCancelled == nil }) {
            note("cancel the onChange of the live list of query \(list.query)")
            list.stopTelling()
            return
        }
        guard !feeds.isEmpty else { return }
        let feed = feeds.remove(at: Int(a % UInt64(feeds.count)))
        note("cancel the feed \(feed.scope)")
        let store = try live
        let subscriptions = store.feedSubscriptionCount
        if let streaming = feed.streaming {
            // The stream ends with the task iterating it; the store drops the subscription
            // when told, on its actor.
            streaming.cancel()
            await letStreamsCatchUp { store.feedSubscriptionCount == subscriptions - 1 }
            guard store.feedSubscriptionCount == subscriptions - 1 else {
                throw Divergence(message: "the store still counts a feed whose stream ended")
            }
            return
        }
        feed.token?.cancel()
        guard feed.token?.isActive == false, store.feedSubscriptionCount == subscriptions - 1 else {
            throw Divergence(message: "a cancelled feed is still active, or the store still counts it")
        }
    }

    /// How many rows the reference shows linking to an item, and the keyed ones.
    private func linking(to key: Int64) -> (count: Int, keys: Set<Int64>) {
        let rows = rows(linkingTo: key)
        return (rows.count, Set(rows.compactMap { if case .key(let key) = $0 { key } else { nil } }))
    }

    /// Each feed heard what the table's feed heard in its scope, nothing else; a feed of
    /// children heard when the rows linking to its item changed.
    func checkFeeds() async throws {
        for feed in feeds {
            defer {
                feed.heard = []
                feed.from = 0
            }
            if case .children(let parent) = feed.scope {
                try check(childrenFeed: feed, of: parent)
                continue
            }
            let expected = events[min(feed.from, events.count)...].compactMap(feed.narrowed)
            if feed.streaming != nil { await letStreamsCatchUp { feed.heard.count >= expected.count } }
            guard expected.count == feed.heard.count, zip(expected, feed.heard).allSatisfy(Self.same) else {
                throw Divergence(message: "a feed of \(feed.scope) heard \(Self.describe(feed.heard)); the table's feed heard, in that scope, \(Self.describe(expected))")
            }
            for event in feed.heard where event.kind != .reset {
                for column in Item.Column.allCases where event.changed(column.keyPath) != event.changes.contains(where: { $0.index == column.rawValue }) {
                    throw Divergence(message: "event.changed(\\.\(column)) of \(Self.describe([event])) is wrong")
                }
                if let change = event.changes.first(where: { $0.index == Item.Column.count.rawValue }),
                   case .integer(let old) = change.old, case .integer(let new) = change.new {
                    guard let typed = event.change(of: \Item.count), typed.old == Int(old), typed.new == Int(new) else {
                        throw Divergence(message: "event.change(of: \\.count) of \(Self.describe([event])) is wrong")
                    }
                }
            }
        }
    }

    private func check(childrenFeed feed: ScopedFeed, of parent: Int64) throws {
        for event in feed.heard {
            guard event.kind == .reset || (event.kind == .children("linkedFrom") && event.key == .integer(parent)) else {
                throw Divergence(message: "a feed of \(feed.scope) heard \(Self.describe([event]))")
            }
        }
        let now = linking(to: parent)
        defer { feed.linking = now }
        guard let before = feed.linking, reference.shown(.key(parent)) != nil else { return }
        // A new row that got its key is the same row: only a change of the count, or of the
        // keyed rows where no new row links, is surely a change of the children.
        let changed = before.count != now.count || (before.count == before.keys.count && now.count == now.keys.count && before.keys != now.keys)
        if changed, feed.heard.isEmpty {
            throw Divergence(message: "the rows linking to \(parent) went from \(before.keys.sorted()) (\(before.count)) to \(now.keys.sorted()) (\(now.count)), and a feed of \(feed.scope) heard nothing")
        }
    }

    private static func same(_ a: ChangeEvent, _ b: ChangeEvent) -> Bool {
        a.table == b.table && a.key == b.key && a.kind == b.kind && a.origin == b.origin && a.changes.count == b.changes.count
            && zip(a.changes, b.changes).allSatisfy { $0.index == $1.index && $0.column == $1.column && Values.same($0.old, $1.old) && Values.same($0.new, $1.new) }
    }

    private static func describe(_ events: [ChangeEvent]) -> String {
        "[" + events.map { event in
            "\(event.kind) \(event.key.describedExactly)" + (event.changes.isEmpty ? "" : " " + event.changes.map { "\($0.column): \($0.old.describedExactly)→\($0.new.describedExactly)" }.joined(separator: ", "))
        }.joined(separator: "; ") + "]"
    }
}
