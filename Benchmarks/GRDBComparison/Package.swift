// swift-tools-version: 6.1
// GRDB's re-running observations on the workloads `modelctl bench` measures, for the figures
// in Benchmarks/README.md. Not part of the TrackedModels package, and not built by CI:
// `swift run -c release grdb-rerun --rows 100000` from this folder.
import PackageDescription

let package = Package(
    name: "GRDBComparison",
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
    ],
    targets: [
        .executableTarget(name: "grdb-rerun", dependencies: [.product(name: "GRDB", package: "GRDB.swift")]),
    ]
)
