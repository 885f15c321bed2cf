import Foundation
import NIOSSL
import PostgresNIO

/// Where a PostgreSQL database is, read from a URL such as
/// `postgres://user:password@db.example.com:5432/app?sslmode=require`.
///
/// As libpq reads it: the user defaults to `$USER`, the port to 5432, the database to the
/// user's name; `sslmode` is `disable`, `prefer` (the default: TLS when the server offers it)
/// or `require`. A host that is a path (`postgres:///app?host=/var/run/postgresql`) is a Unix
/// socket's folder.
///
/// A server that stops answering without closing the connection (its host gone, the network
/// between cut) is noticed in about 25 s on both ends of the store's libpq connections (see
/// ``LivenessChecks``); libpq's options `keepalives_idle`, `keepalives_interval`,
/// `keepalives_count` (seconds, probes) and `tcp_user_timeout` (milliseconds) set it otherwise.
/// (The postgres-nio connections, the doorbell's and the readers', keep the kernel's limits.)
///
/// Related PostgreSQL documentation:
/// <https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS>
struct PostgresEndpoint: Sendable, CustomStringConvertible {
    var host: String
    var port: Int
    var socketFolder: String?
    var user: String
    var password: String?
    var database: String
    var sslMode: String
    var liveness = LivenessChecks()

    /// How a TCP connection notices that the other end stopped answering: after `idle` seconds
    /// of silence, `count` keepalive probes `interval` seconds apart go unanswered; data sent
    /// and not acknowledged for `userTimeout` milliseconds. Each end checks: the store's side
    /// fails what waits on the connection instead of waiting for the kernel's own limits (two
    /// hours idle, about fifteen minutes with data in flight), and the server's side ends a
    /// session whose client vanished, rolling back its transaction (whose locks would hold the
    /// store's next commit of the same rows).
    struct LivenessChecks {
        var idle = 10
        var interval = 5
        var count = 3
        var userTimeout = 25_000

        /// The options libpq takes for the store's end.
        var libpqOptions: [(String, String)] {
            [
                ("keepalives", "1"), ("keepalives_idle", "\(idle)"), ("keepalives_interval", "\(interval)"), ("keepalives_count", "\(count)"),
                ("tcp_user_timeout", "\(userTimeout)"),
            ]
        }

        /// The statements that set the server's end, once connected. (Not the startup packet's
        /// `options`, which connection poolers such as PgBouncer refuse.)
        var serverSettings: String {
            "SET tcp_keepalives_idle = \(idle); SET tcp_keepalives_interval = \(interval); SET tcp_keepalives_count = \(count); SET tcp_user_timeout = \(userTimeout)"
        }
    }

    /// Reads a URL.
    ///
    /// - Throws: ``StoreError/Code/cannotOpen`` naming what is wrong with it.
    init(url: String) throws {
        func invalid(_ problem: String) -> StoreError {
            StoreError(code: .cannotOpen, message: "\(problem) in the PostgreSQL URL \(Self.redacted(url)); write it as postgres://user:password@host:port/database")
        }
        guard let components = URLComponents(string: url) else { throw invalid("not a URL") }
        guard let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql" else {
            throw invalid("the scheme is not postgres://")
        }
        let options = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        // URLComponents hands these back decoded already.
        user = components.user ?? options["user"] ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        password = components.password ?? options["password"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !path.contains("/") else { throw invalid("the database name \(path) holds a slash") }
        database = path.isEmpty ? options["dbname"] ?? user : path
        let hostOption = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? options["host"]
        if let hostOption, hostOption.hasPrefix("/") {
            socketFolder = hostOption
            host = "localhost"
        } else {
            host = hostOption ?? "localhost"
        }
        if let portOption = components.port ?? options["port"].flatMap(Int.init) {
            guard (1...65535).contains(portOption) else { throw invalid("port \(portOption) is out of range") }
            port = portOption
        } else if options["port"] != nil {
            throw invalid("the port is not a number")
        } else {
            port = 5432
        }
        sslMode = options["sslmode"] ?? "prefer"
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw invalid("sslmode \(sslMode) is not one of disable, prefer, require")
        }
        func positive(_ name: String, _ value: inout Int, unit: String = "seconds") throws {
            guard let text = options[name] else { return }
            guard let number = Int(text), number > 0, number <= Int(Int32.max) else {
                throw invalid("\(name)=\(text) is not a positive whole number of \(unit) (at most \(Int32.max))")
            }
            value = number
        }
        try positive("keepalives_idle", &liveness.idle)
        try positive("keepalives_interval", &liveness.interval)
        try positive("keepalives_count", &liveness.count, unit: "probes")
        try positive("tcp_user_timeout", &liveness.userTimeout, unit: "milliseconds")
    }

    /// `user@host:port/database`, without the password: how messages and logs name it.
    var description: String {
        if let socketFolder { return "\(user)@\(socketFolder)/.s.PGSQL.\(port)/\(database)" }
        return "\(user)@\(host):\(port)/\(database)"
    }

    /// postgres-nio's configuration for a connection.
    func configuration() throws -> PostgresConnection.Configuration {
        if let socketFolder {
            return PostgresConnection.Configuration(
                unixSocketPath: "\(socketFolder)/.s.PGSQL.\(port)", username: user, password: password, database: database
            )
        }
        let tls: PostgresConnection.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "require": tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var configuration = PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// A URL with its passwords left out, for messages: whatever stands between the scheme's
    /// `//`, the user's `:` and the `@`, and the value of a `password=` option (even in a URL
    /// that does not parse).
    static func redacted(_ url: String) -> String {
        // By Unicode scalar: a separator that a combining mark follows is one `Character`, and
        // a search by Character would miss it and leave the password in.
        var scalars = Array(url.unicodeScalars)
        if let scheme = scalars.indices.first(where: { scalars[$0...].starts(with: "://".unicodeScalars) }),
           let at = scalars[(scheme + 3)...].lastIndex(of: "@"), let colon = scalars[(scheme + 3)..<at].firstIndex(of: ":") {
            scalars = Array(scalars[...colon]) + Array("…".unicodeScalars) + Array(scalars[at...])
        }
        func text(_ part: ArraySlice<Unicode.Scalar>) -> String { String(String.UnicodeScalarView(part)) }
        guard let query = scalars.firstIndex(of: "?") else { return text(scalars[...]) }
        let options = scalars[(query + 1)...].split(separator: "&", omittingEmptySubsequences: false).map { option in
            text(option.prefix(9)).lowercased() == "password=" ? "password=…" : text(option)
        }
        return text(scalars[...query]) + options.joined(separator: "&")
    }
}
