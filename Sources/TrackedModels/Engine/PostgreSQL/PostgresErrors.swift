import NIOCore
import NIOPosix
import PostgresNIO

/// postgres-nio's and libpq's errors in the store's terms: a ``StoreError`` whose message names the server
/// and database, what the store was doing, and the cause, with the error itself underneath.
///
/// The SQLSTATE decides the code, as the SQLite engine's result codes do: class 23 is a
/// refused change, 22 a value the column cannot hold, 40 a conflict worth retrying, 53 a full
/// server, 57 and 08 (and every connection failure on this side) a lost connection, which may
/// pass once the server is back.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/errcodes-appendix.html>
enum PostgresErrors {
    static func storeError(_ error: any Error, endpoint: PostgresEndpoint, doing operation: String) -> StoreError {
        if let error = error as? StoreError { return error }
        let place = "PostgreSQL at \(endpoint)"
        guard let server = ServerReport(error) else {
            if let error = error as? PSQLError,
               [.unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError].contains(error.code) {
                return StoreError(code: .accessDenied, message: "\(operation) failed: \(place) refused the credentials (\(error.code)); check the user and password in the URL", underlying: error)
            }
            if let error = error as? PSQLError, error.code == .sslUnsupported {
                return StoreError(code: .cannotOpen, message: "\(operation) failed: \(place) does not offer TLS, which sslmode=require asks for; enable TLS on the server, or use sslmode=prefer", underlying: error)
            }
            let cause = (error as? PSQLError)?.underlying.map { "\($0)" } ?? "\(error)"
            guard isConnectionFailure(error) else {
                return StoreError(code: .engineFailure, message: "\(operation) failed on \(place): \(cause)", underlying: error)
            }
            return StoreError(
                code: .connectionLost,
                message: "\(operation) failed: the connection to \(place) was lost or refused (\(cause)); check that the server runs and accepts connections there"
                    + (operation == "connecting" ? "" : " — the store tries again"),
                mayPass: true, underlying: error
            )
        }
        let error = server.error
        let state = server.sqlState
        let serverMessage = server.message ?? "error \(state)"
        let detail = server.detail.map { " (\($0))" } ?? ""
        let message = "\(operation) failed on \(place): \(serverMessage)\(detail)"
        let stateClass = state.prefix(2)
        switch state {
        case "28P01", "28000":
            return StoreError(code: .accessDenied, message: "\(operation) failed: \(place) refused the credentials (\(serverMessage)); check the user and password in the URL", underlying: error)
        case "3D000":
            return StoreError(code: .cannotOpen, message: "\(operation) failed: \(place) has no such database (\(serverMessage)); create it (createdb \(endpoint.database)) or fix the URL", underlying: error)
        case "23505":
            let isKey = server.constraint?.hasSuffix("_pkey") == true
            return StoreError(code: .constraintRefused, message: message, constraint: isKey ? .primaryKey : .unique, underlying: error)
        case "23502": return StoreError(code: .constraintRefused, message: message, constraint: .notNull, underlying: error)
        case "23503": return StoreError(code: .constraintRefused, message: message, constraint: .foreignKey, underlying: error)
        case "23514": return StoreError(code: .constraintRefused, message: message, constraint: .check, underlying: error)
        case "53300":
            return StoreError(code: .connectionLost, message: message + "; the store tries again", mayPass: true, underlying: error)
        case "55P03", "55006":
            return StoreError(code: .busy, message: message, mayPass: true, underlying: error)
        case "57014":
            // A statement timeout or a cancel request: the connection is fine.
            return StoreError(code: .busy, message: message + " (statement_timeout, or cancelled)", mayPass: true, underlying: error)
        case "25006":
            return StoreError(code: .readOnly, message: message + " (the server or the transaction is read-only)", underlying: error)
        case "25P02":
            return StoreError(code: .engineFailure, message: message, underlying: error)
        default:
            break
        }
        switch stateClass {
        case "23": return StoreError(code: .constraintRefused, message: message, constraint: .other, underlying: error)
        case "22": return StoreError(code: .valueNotStorable, message: message, underlying: error)
        case "40": return StoreError(code: .busy, message: message, mayPass: true, underlying: error)
        case "53": return StoreError(code: .storageFull, message: message + "; the changes stay pending until the server has room", underlying: error)
        case "08", "57": return StoreError(code: .connectionLost, message: message + "; the store tries again once the server is back", mayPass: true, underlying: error)
        case "58": return StoreError(code: .ioFailure, message: message, underlying: error)
        case "42":
            if state == "42501" { return StoreError(code: .readOnly, message: message + "; grant the user the rights it needs", underlying: error) }
            return StoreError(code: .engineFailure, message: message, underlying: error)
        default: return StoreError(code: .engineFailure, message: message, underlying: error)
        }
    }

    /// What the server reported, from postgres-nio's current error, the one its older
    /// interfaces still throw, or libpq's.
    private struct ServerReport {
        var sqlState: String
        var message: String?
        var detail: String?
        var constraint: String?
        /// The server function that raised it.
        var routine: String?
        var error: any Error

        init?(_ error: any Error) {
            if let error = error as? PSQLError, error.code == .server, let info = error.serverInfo, let state = info[.sqlState] {
                (sqlState, message, detail, constraint, routine) = (state, info[.message], info[.detail], info[.constraintName], info[.routine])
                self.error = error
            } else if let error = error as? PostgresPipeline.ServerError {
                (sqlState, message, detail, constraint, routine) = (error.sqlState, error.message, error.detail, error.constraint, error.routine)
                self.error = error
            } else if case .server(let report) = error as? PostgresError, let state = report.fields[.sqlState] {
                (sqlState, message, detail, constraint, routine) = (state, report.fields[.message], report.fields[.detail], report.fields[.constraintName], report.fields[.routine])
                self.error = error
            } else {
                return nil
            }
        }
    }

    /// The SQLSTATE the server gave for an error (or for the error under a ``StoreError``).
    static func sqlState(of error: any Error) -> String? {
        let cause: any Error = (error as? StoreError)?.underlying ?? error
        return ServerReport(cause)?.sqlState
    }

    /// Whether a prepared statement's execution failed because the statement no longer fits:
    /// the server lost it (26000), or a table changed the type of what it returns (0A000 from
    /// the revalidation of its cached plan, not any other unsupported feature).
    static func isStalePreparedStatement(_ error: any Error) -> Bool {
        guard let report = ServerReport(error) else { return false }
        return report.sqlState == "26000" || (report.sqlState == "0A000" && report.routine == "RevalidateCachedQuery")
    }

    /// Whether an error is about the connection rather than a statement: it could not be made,
    /// or it broke.
    private static func isConnectionFailure(_ error: any Error) -> Bool {
        if let error = error as? PSQLError {
            return [.connectionError, .clientClosedConnection, .serverClosedConnection, .uncleanShutdown, .failedToAddSSLHandler]
                .contains(error.code)
        }
        if case .connectionClosed = error as? PostgresError { return true }
        if error is PostgresPipeline.ConnectionFailure { return true }
        return error is ChannelError || error is IOError || error is NIOConnectionError
    }
}
