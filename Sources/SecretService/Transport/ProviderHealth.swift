#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBusTransport
import Waiting

/// What the connection knows of a provider that stopped answering: the one record of the
/// provider's health, kept by the connection's ``ProviderTraffic`` (which sees every message the
/// provider sends) and read before every call (``ProviderBus/ensureResponding(_:operation:deadline:)``).
///
/// The provider counts as silent once a call to it reached its deadline with no reply at all while
/// no prompt was open on the connection (a provider may hold its answers while it shows a dialog:
/// that is a person deciding, not a stopped provider). Any message from it (a reply, an error, a
/// signal) and a change of owner end the silence.
struct ProviderSilence: Sendable, Equatable {
    /// The provider's unique name.
    let provider: String
    /// When the call that got no reply was sent (the provider has answered nothing since).
    let since: ContinuousClock.Instant
    /// The same moment on the wall clock, for messages.
    let sinceDate: Date
    /// That call: what it was and how long it waited.
    let unansweredCall: String
    /// Probes sent since, none answered.
    var probes = 0
    /// When the last probe was sent and how long it waited.
    var lastProbe: String?

    init(provider: String, since: ContinuousClock.Instant, unansweredCall: String) {
        self.provider = provider
        self.since = since
        let ago = ContinuousClock.now - since
        self.sinceDate = Date() - (Double(ago.components.seconds) + Double(ago.components.attoseconds) / 1e18)
        self.unansweredCall = unansweredCall
    }

    /// "no reply from :1.5 since 2026-12-02T18:40:02Z (3.1 s ago): …", for `detail`.
    var detail: String {
        var text = "no reply from \(provider) since \(sinceDate.formatted(.iso8601)) (\((ContinuousClock.now - since).secondsText) ago): "
            + unansweredCall
        if let lastProbe {
            text += "; then \(probes) probe\(probes == 1 ? "" : "s") (\(ProviderSilence.probeDescription)), none answered, the last \(lastProbe)"
        }
        return text
    }

    /// How long a probe waits for its answer at most (less when the caller has less time left).
    static let probeTimeout = Duration.milliseconds(500)

    /// The probe: a property every provider answers from its own code (not only from its D-Bus
    /// library, as `Peer.Ping` could be), and cheap.
    static let probeDescription = "Properties.Get of Secret.Service.Collections"

    /// The operation a probe runs under, which tells a probe from other calls.
    static let probeOperation = "check that the keyring service answers"

    static func probe(to owner: String) -> MethodCall {
        MethodCall(destination: owner, path: .service, interface: "org.freedesktop.DBus.Properties", member: "Get",
                   arguments: .tuple([.string("org.freedesktop.Secret.Service"), .string("Collections")]))
    }
}

extension ProviderBus {
    /// Returns at once while `owner` has not been silent; otherwise probes it (one probe at a
    /// time, shared by the calls that arrive meanwhile, within ``ProviderSilence/probeTimeout``
    /// and the caller's own deadline) and returns once it answers.
    /// - Throws: `.notResponding` (with the ``ProviderSilence/detail``) when the probe got no reply
    ///   either; `.timedOut` when the caller's deadline ends first; `.cancelled`; `.disconnected`.
    func ensureResponding(_ owner: String, operation: String, deadline: Deadline) async throws(SecretServiceError) {
        guard traffic.silence(of: owner) != nil else { return }
        let traffic = traffic
        let answered = try await probing.value(operation: operation, deadline: deadline) { [self] deadline throws(SecretServiceError) in
            guard traffic.silence(of: owner) != nil else { return true }
            do throws(SecretServiceError) {
                _ = try await call(ProviderSilence.probe(to: owner), operation: ProviderSilence.probeOperation,
                                   deadline: min(deadline, Deadline(timeout: ProviderSilence.probeTimeout)))
            } catch where error.code == .disconnected || error.code == .cancelled {
                throw error
            } catch {
                // An error reply is an answer too (the router has ended the silence); no reply is not.
            }
            return traffic.silence(of: owner) == nil
        }
        guard !answered, let silence = traffic.silence(of: owner) else {
            SecretServiceDiagnostics.report(.info, "The keyring service \(owner) answers again")
            return
        }
        throw .notResponding(operation, detail: silence.detail + "; this call was not sent")
    }
}
