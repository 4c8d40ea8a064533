import DBusTransport
import Foundation
import Testing
import Waiting
@testable import SecretService

/// The provider's health as its traffic keeps it, without a bus: a call to the provider that got no
/// reply by its deadline makes it silent, unless a prompt was open; anything it sends ends that.
@Suite("Provider health, without a bus")
struct ProviderHealthTests {
    private static let provider = TrafficBench.provider

    /// Awaits a prompt's Completed from the provider, as a prompt being shown does.
    private func prompt(_ bench: TrafficBench, _ path: String) {
        let awaited = MessageRouter.AwaitedSignal(sender: Self.provider, interface: "org.freedesktop.Secret.Prompt",
                                                  member: "Completed", operation: "unlock") { _ in }
        bench.traffic.promptAwaited()
        #expect(bench.router.awaitSignal(awaited, on: try! ObjectPath(path)))
    }

    @Test func aCallWithoutAReplyMakesTheProviderSilentAndSaysWhatWaitedHowLong() throws {
        let bench = TrafficBench()
        bench.register(serial: 5)
        let pending = try #require(bench.router.noReply(serial: 5))
        bench.traffic.noReply(to: pending)
        let silence = try #require(bench.traffic.silence(of: Self.provider))
        #expect(silence.detail.hasPrefix("no reply from :1.42 since 2"), "\(silence.detail)")
        #expect(silence.detail.contains("Secret.Item.GetSecret on /org/freedesktop/secrets/collection/login/3 (read secret) got no reply within"))
        #expect(bench.traffic.silence(of: ":1.43") == nil, "another provider is not this one")
    }

    @Test func probesThatGetNoReplyAreCountedAndKeepTheFirstMoment() throws {
        let bench = TrafficBench()
        bench.register(serial: 5)
        bench.noReply(serial: 5)
        let first = try #require(bench.traffic.silence(of: Self.provider))
        bench.register(serial: 6, operation: ProviderSilence.probeOperation)
        bench.noReply(serial: 6)
        let later = try #require(bench.traffic.silence(of: Self.provider))
        #expect(later.since == first.since && later.probes == 1)
        #expect(later.detail.contains("then 1 probe (Properties.Get of Secret.Service.Collections), none answered"), "\(later.detail)")
    }

    @Test func anyReplyOrSignalFromTheProviderEndsTheSilence() {
        let bench = TrafficBench()
        bench.register(serial: 5)
        bench.noReply(serial: 5)
        bench.register(serial: 6)
        #expect(bench.receive(bench.reply(to: 6, .tuple([.string("x")]), error: "org.freedesktop.DBus.Error.UnknownMethod")))
        #expect(bench.traffic.silence(of: Self.provider) == nil, "an error reply is an answer")

        bench.register(serial: 8)
        bench.noReply(serial: 8)
        bench.register(serial: 9)
        #expect(bench.receive(bench.reply(to: 9, .tuple([.string("no reply")]), error: "org.freedesktop.DBus.Error.NoReply",
                                          from: "org.freedesktop.DBus")))
        #expect(bench.traffic.silence(of: Self.provider) != nil, "an error the bus sends in the provider's name is no answer")

        bench.register(serial: 7)
        bench.noReply(serial: 7)
        #expect(bench.traffic.silence(of: Self.provider) != nil)
        bench.receive(bench.signal(from: Self.provider, path: "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                                   "CollectionChanged", .tuple([.objectPath(.service)])))
        #expect(bench.traffic.silence(of: Self.provider) == nil, "a signal from it is an answer")
    }

    @Test func aCallToTheBusOrDuringAPromptIsNotASilentProvider() throws {
        let bench = TrafficBench()
        bench.register(serial: 5, destination: "org.freedesktop.DBus")
        bench.noReply(serial: 5)
        #expect(bench.traffic.silence(of: Self.provider) == nil, "the bus is not the provider")

        // A prompt open when the deadline came.
        prompt(bench, "/org/freedesktop/secrets/prompt/p1")
        bench.register(serial: 6)
        bench.noReply(serial: 6)
        #expect(bench.traffic.silence(of: Self.provider) == nil, "a prompt was open")
        bench.router.stopAwaiting(on: try ObjectPath("/org/freedesktop/secrets/prompt/p1"))

        // A prompt opened and closed while the call waited.
        bench.register(serial: 7)
        prompt(bench, "/org/freedesktop/secrets/prompt/p2")
        bench.router.stopAwaiting(on: try ObjectPath("/org/freedesktop/secrets/prompt/p2"))
        bench.noReply(serial: 7)
        #expect(bench.traffic.silence(of: Self.provider) == nil, "a prompt was open during the call")

        // None at all: silent.
        bench.register(serial: 8)
        bench.noReply(serial: 8)
        #expect(bench.traffic.silence(of: Self.provider) != nil)
    }

    @Test func aNewOwnerIsNotSilent() {
        let bench = TrafficBench()
        bench.register(serial: 5)
        bench.noReply(serial: 5)
        bench.receive(bench.signal(from: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                                   .tuple([.string("org.freedesktop.secrets"), .string(Self.provider), .string(":1.66")])))
        #expect(bench.traffic.silence(of: Self.provider) == nil && bench.traffic.silence(of: ":1.66") == nil)
    }

    @Test func errorsSayWhatWasWaitedForAndTheStoppedProviderIsTyped() {
        let timedOut = SecretServiceError.timedOut("read secret", after: .seconds(2))
        #expect(timedOut.detail == "waited 2 s, the call's whole timeout, to read secret")
        let stopped = SecretServiceError.notResponding("read secret", detail: "no reply from :1.42 since …")
        #expect(stopped.code == .notResponding && stopped.detail == "no reply from :1.42 since …")
        #expect(stopped.recovery?.contains("restart it") == true)
    }
}
