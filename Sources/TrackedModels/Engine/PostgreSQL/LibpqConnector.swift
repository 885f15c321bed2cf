import CLibpq
import Foundation
import Logging
import NIOCore

/// Makes the libpq connections of a ``PostgresPipeline``, in pipeline mode and nonblocking.
///
/// Connects as the store's other connections (postgres-nio's) do: TLS, when used, verifies the
/// server's certificate and name against the system's trusted roots (libpq's `verify-full`), and
/// `sslmode=prefer` falls back to no TLS only where the server offers none. A refused
/// connection fails as theirs would (see ``classified(_:)``).
struct LibpqConnector {
    let endpoint: PostgresEndpoint
    /// What the connection calls itself to the server (`application_name`).
    let role: String
    let logger: Logger

    /// A new connection.
    ///
    /// - Throws: A ``StoreError`` in the store's terms.
    func connect() throws -> OpaquePointer {
        do {
            do {
                return try connect(sslMode: endpoint.sslMode == "disable" ? "disable" : "verify-full")
            } catch let failure as PostgresPipeline.ConnectionFailure where endpoint.sslMode == "prefer" && failure.description.contains("does not support SSL") {
                return try connect(sslMode: "disable")
            }
        } catch let failure as PostgresPipeline.ConnectionFailure {
            throw classified(failure)
        }
    }

    private func connect(sslMode: String) throws -> OpaquePointer {
        var options: [(String, String)] = [
            ("host", endpoint.socketFolder ?? endpoint.host), ("port", String(endpoint.port)), ("user", endpoint.user), ("dbname", endpoint.database),
            ("sslmode", sslMode), ("gssencmode", "disable"), ("application_name", role), ("client_encoding", "UTF8"), ("connect_timeout", "10"),
        ]
        options += endpoint.liveness.libpqOptions
        if let password = endpoint.password { options.append(("password", password)) }
        if sslMode == "verify-full", let roots = Self.trustedRoots { options.append(("sslrootcert", roots)) }
        let keywords = options.map { strdup($0.0) }
        let values = options.map { strdup($0.1) }
        defer { (keywords + values).forEach { free($0) } }
        let made = (keywords.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { keywords in
            (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { values in PQconnectdbParams(keywords.baseAddress, values.baseAddress, 0) }
        }
        guard let made else { throw StoreError(code: .engineFailure, message: "connecting to PostgreSQL at \(endpoint) failed: libpq is out of memory") }
        guard PQstatus(made) == CONNECTION_OK, Self.run(endpoint.liveness.serverSettings, on: made),
              PQsetnonblocking(made, 1) == 0, PQenterPipelineMode(made) == 1
        else {
            let failure = PostgresPipeline.ConnectionFailure(made)
            PQfinish(made)
            throw failure
        }
        // The server's notices ("already exists, skipping") are nobody's business: libpq would
        // print them on standard error.
        PQsetNoticeProcessor(made, { _, _ in }, nil)
        return made
    }

    /// Runs statements on a new connection, before it enters pipeline mode; whether they ran.
    private static func run(_ sql: String, on connection: OpaquePointer) -> Bool {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        return PQresultStatus(result) == PGRES_COMMAND_OK
    }

    /// The system's bundle of trusted root certificates (Debian's, Red Hat's, Alpine's), as
    /// swift-nio-ssl finds it for the store's other connections.
    private static let trustedRoots = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
        .first { FileManager.default.fileExists(atPath: $0) }

    /// A refused connection in the store's terms. libpq does not hand over the server's
    /// SQLSTATE for it, so postgres-nio, which does, tries once: its failure is classified as
    /// the store's other connections classify theirs (credentials, a missing database), and a
    /// server it reaches makes the failure a lost connection, which may pass.
    private func classified(_ failure: PostgresPipeline.ConnectionFailure) -> StoreError {
        do {
            PostgresSession.close(try PostgresSession.makeConnection(endpoint, role: role, logger: logger).wait())
            return PostgresErrors.storeError(failure, endpoint: endpoint, doing: "connecting")
        } catch let error as StoreError {
            return error
        } catch {
            return PostgresErrors.storeError(error, endpoint: endpoint, doing: "connecting")
        }
    }
}
