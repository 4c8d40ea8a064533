import CGLib
import Foundation
import Testing
import Waiting
@testable import SecretService

/// The provider's health as the router keeps it, without a bus: a call to the provider that got no
/// reply by its deadline makes it silent, unless a prompt was open; anything it sends ends that.
@Suite("Provider health, without a bus")
struct ProviderHealthTests {
    private static let provider = ":1.42"

    private func routerWithOwner() -> SignalRouter {
        let router = SignalRouter(busName: ":1.7")
        register(router, serial: 1, destination: "org.freedesktop.DBus", isOwnerQuery: true)
        #expect(receive(router, reply(to: 1, .tuple([.string(Self.provider)]), from: "org.freedesktop.DBus")))
        #expect(router.owner == Self.provider)
        return router
    }

    private func register(_ router: SignalRouter, serial: UInt32, destination: String = provider,
                          isOwnerQuery: Bool = false, isProbe: Bool = false) {
        router.registering { _, register in
            register(serial, .init(destination: destination, path: "/org/freedesktop/secrets/collection/login/3",
                                   interface: "org.freedesktop.Secret.Item", member: "GetSecret", operation: "read secret",
                                   phase: .call, isOwnerQuery: isOwnerQuery, isProbe: isProbe, deliver: { _ in }))
        }
    }

    private func reply(to serial: UInt32, _ body: Argument?, error: String? = nil, from sender: String = provider) -> OpaquePointer {
        let message = g_dbus_message_new()!
        g_dbus_message_set_sender(message, sender)
        g_dbus_message_set_message_type(message, error == nil ? G_DBUS_MESSAGE_TYPE_METHOD_RETURN : G_DBUS_MESSAGE_TYPE_ERROR)
        g_dbus_message_set_reply_serial(message, serial)
        if let error { g_dbus_message_set_error_name(message, error) }
        if let body { g_dbus_message_set_body(message, body.build()) }
        return message
    }

    @discardableResult
    private func receive(_ router: SignalRouter, _ message: OpaquePointer) -> Bool {
        let consumed = router.receive(message)
        if !consumed { g_object_unref(UnsafeMutableRawPointer(message)) }
        return consumed
    }

    private func prompt(_ router: SignalRouter, _ path: String) {
        let awaited = SignalRouter.AwaitedSignal(sender: Self.provider, interface: "org.freedesktop.Secret.Prompt",
                                                 member: "Completed", operation: "unlock") { _ in }
        #expect(router.awaitSignal(awaited, on: try! ObjectPath(path), fromProvider: true))
    }

    @Test func aCallWithoutAReplyMakesTheProviderSilentAndSaysWhatWaitedHowLong() throws {
        let router = routerWithOwner()
        register(router, serial: 5)
        let waited = try #require(router.noReply(serial: 5))
        #expect(waited.contains("Secret.Item.GetSecret on /org/freedesktop/secrets/collection/login/3 (read secret) got no reply within"))
        let silence = try #require(router.silence(of: Self.provider))
        #expect(silence.detail.hasPrefix("no reply from :1.42 since 2"), "\(silence.detail)")
        #expect(silence.detail.contains("Secret.Item.GetSecret"))
        #expect(router.silence(of: ":1.43") == nil, "another provider is not this one")
    }

    @Test func probesThatGetNoReplyAreCountedAndKeepTheFirstMoment() throws {
        let router = routerWithOwner()
        register(router, serial: 5)
        router.noReply(serial: 5)
        let first = try #require(router.silence(of: Self.provider))
        register(router, serial: 6, isProbe: true)
        router.noReply(serial: 6)
        let later = try #require(router.silence(of: Self.provider))
        #expect(later.since == first.since && later.probes == 1)
        #expect(later.detail.contains("then 1 probe (Properties.Get of Secret.Service.Collections), none answered"), "\(later.detail)")
    }

    @Test func anyReplyOrSignalFromTheProviderEndsTheSilence() {
        let router = routerWithOwner()
        register(router, serial: 5)
        router.noReply(serial: 5)
        register(router, serial: 6)
        #expect(receive(router, reply(to: 6, .tuple([.string("x")]), error: "org.freedesktop.DBus.Error.UnknownMethod")))
        #expect(router.silence(of: Self.provider) == nil, "an error reply is an answer")

        register(router, serial: 8)
        router.noReply(serial: 8)
        register(router, serial: 9)
        #expect(receive(router, reply(to: 9, .tuple([.string("no reply")]), error: "org.freedesktop.DBus.Error.NoReply",
                                      from: "org.freedesktop.DBus")))
        #expect(router.silence(of: Self.provider) != nil, "an error the bus sends in the provider's name is no answer")

        register(router, serial: 7)
        router.noReply(serial: 7)
        #expect(router.silence(of: Self.provider) != nil)
        let signal = g_dbus_message_new_signal("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "CollectionChanged")!
        g_dbus_message_set_sender(signal, Self.provider)
        g_dbus_message_set_body(signal, Argument.tuple([.objectPath(.service)]).build())
        receive(router, signal)
        #expect(router.silence(of: Self.provider) == nil, "a signal from it is an answer")
    }

    @Test func aCallToTheBusOrDuringAPromptIsNotASilentProvider() {
        let router = routerWithOwner()
        register(router, serial: 5, destination: "org.freedesktop.DBus")
        router.noReply(serial: 5)
        #expect(router.silence(of: Self.provider) == nil, "the bus is not the provider")

        // A prompt open when the deadline came.
        prompt(router, "/org/freedesktop/secrets/prompt/p1")
        register(router, serial: 6)
        router.noReply(serial: 6)
        #expect(router.silence(of: Self.provider) == nil, "a prompt was open")
        router.stopAwaiting(on: try! ObjectPath("/org/freedesktop/secrets/prompt/p1"))

        // A prompt opened and closed while the call waited.
        register(router, serial: 7)
        prompt(router, "/org/freedesktop/secrets/prompt/p2")
        router.stopAwaiting(on: try! ObjectPath("/org/freedesktop/secrets/prompt/p2"))
        router.noReply(serial: 7)
        #expect(router.silence(of: Self.provider) == nil, "a prompt was open during the call")

        // None at all: silent.
        register(router, serial: 8)
        router.noReply(serial: 8)
        #expect(router.silence(of: Self.provider) != nil)
    }

    @Test func aNewOwnerIsNotSilent() {
        let router = routerWithOwner()
        register(router, serial: 5)
        router.noReply(serial: 5)
        let signal = g_dbus_message_new_signal("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged")!
        g_dbus_message_set_sender(signal, "org.freedesktop.DBus")
        g_dbus_message_set_body(signal, Argument.tuple([.string("org.freedesktop.secrets"), .string(Self.provider), .string(":1.66")]).build())
        receive(router, signal)
        #expect(router.silence(of: Self.provider) == nil && router.silence(of: ":1.66") == nil)
    }

    @Test func errorsSayWhatWasWaitedForAndTheStoppedProviderIsTyped() {
        let timedOut = SecretServiceError.timedOut("read secret", after: .seconds(2))
        #expect(timedOut.detail == "waited 2 s, the call's whole timeout, to read secret")
        let stopped = SecretServiceError.notResponding("read secret", detail: "no reply from :1.42 since …")
        #expect(stopped.code == .notResponding && stopped.detail == "no reply from :1.42 since …")
        #expect(stopped.recovery?.contains("restart it") == true)
    }
}
