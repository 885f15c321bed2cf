// swift-tools-version: 6.2
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "TrackedModels",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10)],
    products: [
        .library(name: "TrackedModels", targets: ["TrackedModels"]),
        .library(name: "TrackedModelsTesting", targets: ["TrackedModelsTesting"]),
        .executable(name: "modelctl", targets: ["modelctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-syntax.git", "602.0.0"..<"604.0.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Already built for postgres-nio's SCRAM authentication; `DatabaseCopy` checksums with it.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            path: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // PostgreSQL's client library, for the worker's pipelined connection.
        .systemLibrary(name: "CLibpq", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .macro(
            name: "TrackedMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(
            name: "TrackedModels",
            dependencies: [
                "CSQLite",
                "CLibpq",
                "TrackedMacros",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "TrackedModelsTesting", dependencies: ["TrackedModels"]),
        .target(
            name: "TrackedModelsBenchmarks",
            dependencies: ["TrackedModels", "CSQLite", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "NIOPosix", package: "swift-nio")]
        ),
        .executableTarget(
            name: "modelctl",
            dependencies: [
                "TrackedModels",
                "TrackedModelsBenchmarks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "tracked-increment-helper",
            dependencies: ["TrackedModels"],
            path: "Tests/Helpers/IncrementHelper"
        ),
        // What the test targets share: the PostgreSQL server they use (a throwaway cluster), and
        // waiting for other processes without blocking Swift's cooperative pool.
        .target(name: "PostgresTestSupport", path: "Tests/PostgresTestSupport"),
        .testTarget(
            name: "TrackedModelsTests",
            dependencies: [
                "TrackedModels",
                "PostgresTestSupport",
                "TrackedModelsTesting",
                "tracked-increment-helper",
                "modelctl",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(name: "TrackedModelsTestingTests", dependencies: ["TrackedModelsTesting"]),
        .testTarget(
            name: "DefaultIsolationTests",
            dependencies: ["TrackedModels"],
            swiftSettings: [.defaultIsolation(MainActor.self)]
        ),
        .testTarget(name: "modelctlTests", dependencies: ["modelctl", "PostgresTestSupport"]),
        .testTarget(
            name: "TrackedMacrosTests",
            dependencies: [
                "TrackedMacros",
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
        .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    ]
}
