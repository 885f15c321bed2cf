import Foundation
import PropertyBased
import Testing
@testable import TrackedModels

/// The whole store checked against a reference model: generated programs (a table declaration
/// and a sequence of operations: assignments, increments, inserts, deletes, transactions,
/// flushes, reopening, refused changes fixed or discarded, bulk inserts, items related to items
/// (a to-one and its to-many inverse, whose delete rule nullifies), another connection's commits,
/// a busy database or a lost connection) run on a real database, a SQLite file or a PostgreSQL
/// database, and after every step the objects and what they relate to, `find`, typed fetches,
/// live lists, feed events, Observation of the to-many and the database must agree with the
/// reference.
///
/// A failure prints the seed (`.fixedSeed(...)` replays it), the shrunk program and what
/// differed. CI runs a fixed budget; set `TRACKEDMODELS_REFERENCE_PROGRAMS` to run more
/// programs (for example 3000 for a long soak; PostgreSQL runs a fifth of them, each step being
/// round trips to a server) and `TRACKEDMODELS_REFERENCE_STEPS` for longer
/// ones. `TRACKEDMODELS_REFERENCE_TRACE=1` prints every operation as it runs (for a program that
/// crashes the process, which then prints no seed); `TRACKEDMODELS_REFERENCE_REPLAY` runs one
/// printed program again (see ``replay()``), on `TRACKEDMODELS_REFERENCE_ENGINE` (`sqlite`, the
/// default, or `postgres`).
@MainActor
@Suite(.serialized) struct ReferenceModelTests {
    static let programs = ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_PROGRAMS"].flatMap(Int.init) ?? 300
    static let steps = ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_STEPS"].flatMap(Int.init) ?? 40

    static let step = zip(Gen.int(in: 0...155), Gen.uint64(in: 0...(1 << 40)), Gen.uint64(in: 0...(1 << 40)))
        .map { Step(kind: $0, a: $1, b: $2) }

    static let program = zip(Gen.uint64(in: 0...(1 << 32)), step.array(of: 1...steps))

    @Test(arguments: TestEngine.allCases)
    func theStoreAgreesWithTheReferenceAfterEveryStep(_ engine: TestEngine) async throws {
        // Cancelled, saying why, when no PostgreSQL server can be had and none is required.
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        // A fifth on PostgreSQL: each program is round trips to a server, in a database of its own.
        let programs = engine == .sqlite ? Self.programs : max(1, Self.programs / 5)
        var opened = 0
        var firstFailure: ContinuousClock.Instant?
        await propertyCheck(count: programs, input: Self.program) { table, steps in
            // Shrinking runs a program per candidate, on PostgreSQL each in a database of its
            // own: past its budget, candidates pass unrun, so the smallest failing program
            // found so far is the one reported (printed in full when first found).
            if let firstFailure, ContinuousClock.now - firstFailure > Self.shrinkingBudget { return }
            switch try await Self.run(declaration: TableDeclaration(seed: table, engine: engine), steps: steps) {
            case .refusedAtOpen: break
            case .agreed: opened += 1
            case .diverged(let report):
                opened += 1
                if firstFailure == nil {
                    firstFailure = .now
                    print("The reference-model test on \(engine) failed; shrinking for up to \(Self.shrinkingBudget). First failure:\n\(report)")
                }
            }
        }
        // A fifth of the declarations are ones the store must refuse at open; if most are, the
        // generator has gone wrong and the programs test nothing.
        #expect(opened * 2 > programs, "only \(opened) of \(programs) programs ran on a table the store opened")
    }

    /// Replays one program given as the failure prints it, `(table, [(kind, a, b), ...])`, in
    /// `TRACKEDMODELS_REFERENCE_REPLAY`, with its transcript printed as it runs.
    @Test(.enabled(if: replay != nil)) func replay() async throws {
        let numbers = try #require(Self.replay).split { !$0.isNumber }.compactMap { UInt64($0) }
        try #require(numbers.count % 3 == 1, "expected a table seed and (kind, a, b) triples")
        let steps = stride(from: 1, to: numbers.count, by: 3).map { Step(kind: Int(numbers[$0]), a: numbers[$0 + 1], b: numbers[$0 + 2]) }
        let engine = TestEngine(rawValue: ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_ENGINE"] ?? "sqlite") ?? .sqlite
        try await Self.run(declaration: TableDeclaration(seed: numbers[0], engine: engine), steps: steps)
    }

    nonisolated static let replay = ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_REPLAY"]

    /// How long a failure is shrunk at most.
    static let shrinkingBudget = Duration.seconds(300)

    enum Outcome {
        /// The store refused the table at open, as the reference says it must.
        case refusedAtOpen
        case agreed
        /// The report recorded as an issue.
        case diverged(String)
    }

    /// Runs one program; records an issue with the transcript at the first divergence.
    @discardableResult
    static func run(declaration: TableDeclaration, steps: [Step]) async throws -> Outcome {
        let harness = try await Harness.make(declaration: declaration)
        defer { harness.other.close() }
        if Harness.tracing { print("program (\(declaration.seed), [\(steps.map(\.description).joined(separator: ", "))]) on \(declaration)") }
        var outcome = Outcome.agreed
        do {
            guard try await harness.open() else { return .refusedAtOpen }
            try await harness.check()
            for step in steps {
                try await harness.run(step)
                try await harness.check()
            }
            try await harness.reopen()
            try await harness.check()
        } catch {
            // A divergence, or an error the program did not expect.
            if Harness.tracing { print("DIVERGENCE: \(error)") }
            let report = """
                \(error is Divergence ? "" : "threw: ")\(error)
                engine: \(declaration.engine), table: \(declaration)
                program (\(declaration.seed), [\(steps.map(\.description).joined(separator: ", "))]):
                \(harness.transcript.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n"))
                """
            Issue.record("\(report)")
            outcome = .diverged(report)
        }
        if let store = harness.store {
            store.discardPendingChanges()
            try? await store.close()
        }
        return outcome
    }
}
