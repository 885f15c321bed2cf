// swift-tools-version: 6.1
// The headline benchmarks on ordo-one/benchmark (package-benchmark), which adds allocation
// counts and percentiles. A package of its own, so that neither CI nor users build it:
//
//   cd Benchmarks && swift package benchmark
import PackageDescription

let package = Package(
    name: "TrackedModelsBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "TrackedModels", path: ".."),
        // The malloc interposer only: the runtime interposer that 1.38.1 enables by default on
        // Linux with Swift 6.3 is not among this project's package mirrors.
        .package(url: "https://github.com/ordo-one/benchmark.git", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "Headline",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "TrackedModels", package: "TrackedModels"),
            ],
            path: "Benchmarks/Headline",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
