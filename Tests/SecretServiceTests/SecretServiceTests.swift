import Foundation
import Testing
@testable import SecretService

@Suite("Error mapping")
struct ErrorMappingTests {
    private func code(_ error: GLibError, phase: CallPhase = .call) -> SecretServiceError.Code? {
        (SecretServiceError.from(error, operation: "op", phase: phase) as? SecretServiceError)?.code
    }
    private func remote(_ name: String) -> GLibError {
        GLibError(domain: .io, code: 36, message: "message", remoteName: name)
    }

    @Test func connectingToTheBusIsAlwaysNoSessionBus() {
        let error = GLibError(domain: .io, code: 0, message: "Cannot autolaunch D-Bus without X11 $DISPLAY", remoteName: nil)
        #expect(code(error, phase: .connectingBus) == .noSessionBus)
        let mapped = SecretServiceError.from(error, operation: "connect", phase: .connectingBus) as? SecretServiceError
        #expect(mapped?.message.contains("dbus-test/run") == true, "the message says what to do")
        #expect(mapped?.message.contains("autolaunch") == true, "and what happened")
    }

    @Test func serviceUnknownMeansNoProviderWhileOpeningAndGoneLater() {
        #expect(code(remote("org.freedesktop.DBus.Error.ServiceUnknown"), phase: .openingSession) == .noSecretService)
        #expect(code(remote("org.freedesktop.DBus.Error.ServiceUnknown")) == .disconnected)
        #expect(code(remote("org.freedesktop.DBus.Error.NameHasNoOwner")) == .disconnected)
        #expect(code(remote("org.freedesktop.Secret.Error.NoSession")) == .disconnected)
    }

    @Test func aForgottenSessionIsRecognisedWithoutItsDBusName() {
        // libsecret strips "org.freedesktop.Secret.Error.NoSession" from what it passes on.
        #expect(code(GLibError(domain: .io, code: 36, message: "The session does not exist", remoteName: nil)) == .disconnected)
        #expect(code(GLibError(domain: .io, code: 36, message: "The session wrapping the secret does not exist",
                               remoteName: nil)) == .disconnected)
        #expect(code(GLibError(domain: .io, code: 36, message: "The item does not exist", remoteName: nil)) == .providerError)
        // libsecret's error when session keys disagree (KWallet): also fixed by a new session.
        #expect(code(GLibError(domain: .secret, code: 1, message: "Received invalid secret from the secret storage",
                               remoteName: nil)) == .disconnected)
    }

    @Test func remoteNamesMapToTheirCodes() {
        #expect(code(remote("org.freedesktop.Secret.Error.IsLocked")) == .locked)
        #expect(code(remote("org.freedesktop.Secret.Error.NoSuchObject")) == .itemNotFound)
        #expect(code(remote("org.freedesktop.DBus.Error.UnknownObject")) == .itemNotFound)
        #expect(code(remote("org.freedesktop.DBus.Error.NoReply")) == .timedOut)
        #expect(code(remote("org.example.Whatever")) == .providerError)
        let mapped = SecretServiceError.from(remote("org.example.Whatever"), operation: "op", phase: .call) as? SecretServiceError
        #expect(mapped?.dbusErrorName == "org.example.Whatever")
    }

    @Test func libsecretAndGioDomainsMapToTheirCodes() {
        #expect(code(GLibError(domain: .secret, code: 2, message: "locked", remoteName: nil)) == .locked)
        #expect(code(GLibError(domain: .secret, code: 3, message: "gone", remoteName: nil)) == .itemNotFound)
        #expect(code(GLibError(domain: .io, code: 24, message: "timed out", remoteName: nil)) == .timedOut)
        #expect(code(GLibError(domain: .io, code: 18, message: "closed", remoteName: nil)) == .disconnected)
        #expect(SecretServiceError.from(GLibError(domain: .io, code: 19, message: "", remoteName: nil),
                                        operation: "op", phase: .call) is CancellationError)
        #expect(code(GLibError(domain: .other, code: 7, message: "odd", remoteName: nil)) == .providerError)
    }

    @Test func errorsOfOtherLayersPassThrough() {
        struct Other: Error {}
        #expect(SecretServiceError.from(CancellationError(), operation: "op", phase: .call) is CancellationError)
        let already = SecretServiceError(.locked, operation: "op", message: "m")
        #expect((SecretServiceError.from(already, operation: "x", phase: .call) as? SecretServiceError) == already)
        #expect((SecretServiceError.from(Other(), operation: "op", phase: .call) as? SecretServiceError)?.code == .providerError)
    }

    @Test func descriptionsNameTheOperationAndTheDBusError() {
        let error = SecretServiceError(.providerError, operation: "write secret", message: "refused", dbusErrorName: "a.b.C")
        #expect(error.description == "write secret: refused [a.b.C]")
        #expect(error.localizedDescription == error.description)
    }
}

@Suite("Values")
struct ValueTests {
    @Test func contentTypeFollowsTheBytes() {
        #expect(SecretValue(bytes: Data("{\"a\":1}".utf8)).contentType == "text/plain")
        #expect(SecretValue(bytes: Data()).contentType == "text/plain")
        #expect(SecretValue(bytes: Data([0x61, 0x00, 0x62])).contentType == "application/octet-stream")
        #expect(SecretValue(bytes: Data([0xFF, 0xFE])).contentType == "application/octet-stream")
        #expect(SecretValue(bytes: Data("x".utf8), contentType: "application/json").contentType == "application/json")
    }

    @Test func durationsReadNaturally() {
        #expect(Duration.milliseconds(250).secondsText == "250 ms")
        #expect(Duration.seconds(25).secondsText == "25 s")
        #expect(Duration.milliseconds(2500).secondsText == "2.5 s")
    }

    @Test func collectionReferencesDescribeThemselves() {
        #expect(CollectionReference.default.description == "alias 'default'")
        #expect(CollectionReference.path("/x").description == "/x")
        #expect(CollectionReference.session.aliasName == "session")
        #expect(CollectionReference.path("/x").aliasName == nil)
    }

    @Test func anEmptySearchIsRefusedBeforeAnythingIsSent() async {
        do {
            _ = try await SecretServiceClient().searchItems(matching: [:])
            Issue.record("expected invalidArgument")
        } catch let error as SecretServiceError {
            #expect(error.code == .invalidArgument)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

/// The bridge from GLib callbacks to Swift, exercised on the real loop thread without D-Bus.
@Suite("Call bridge: deadlines, cancellation, exactly-once")
struct PendingCallTests {
    @Test func aCallThatNeverCompletesEndsAtItsDeadline() async {
        let started = ContinuousClock.now
        do {
            _ = try await PendingCall<Int>.run(operation: "never", deadline: Deadline(timeout: .milliseconds(200))) { _ in }
            Issue.record("expected a timeout")
        } catch let error as SecretServiceError {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("200 ms"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(190) && elapsed < .seconds(3))
    }

    @Test func aCallCompletedOnTheLoopReturnsItsValue() async throws {
        let value = try await PendingCall<Int>.run(operation: "quick", deadline: Deadline(timeout: .seconds(5))) { call in
            call.finish(.success(42))
        }
        #expect(value == 42)
    }

    @Test func lateResultsAfterTheDeadlineAreDropped() async throws {
        let holder = CallHolder()
        do {
            _ = try await PendingCall<Int>.run(operation: "late", deadline: Deadline(timeout: .milliseconds(50))) { call in
                holder.call = call
            }
        } catch {}
        let late = try #require(holder.call)
        #expect(late.finish(.success(1)) == false, "the continuation was already resumed once")
        #expect(late.isFinished)
    }

    @Test func cancellingTheTaskEndsTheCallAtOnce() async {
        let task = Task {
            try await PendingCall<Int>.run(operation: "cancel", deadline: Deadline(timeout: .seconds(30))) { _ in }
        }
        try? await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        task.cancel()
        let result = await task.result
        if case .failure(let error) = result { #expect(error is CancellationError) } else { Issue.record("expected cancellation") }
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test func anAlreadyCancelledTaskDoesNotStartTheCall() async {
        let started = Flag()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await PendingCall<Int>.run(operation: "pre-cancelled", deadline: Deadline(timeout: .seconds(30))) { _ in
                started.set()
            }
        }
        let result = await task.result
        if case .failure(let error) = result { #expect(error is CancellationError) } else { Issue.record("expected cancellation") }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(!started.value)
    }

    @Test func thousandsOfConcurrentCallsEachResumeExactlyOnce() async throws {
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<5000 {
                group.addTask {
                    try await PendingCall<Int>.run(operation: "many", deadline: Deadline(timeout: .seconds(10))) { call in
                        GLibLoop.shared.perform { call.finish(.success(index)) }
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == (0..<5000).reduce(0, +))
    }
}

final class CallHolder: @unchecked Sendable {
    // @unchecked Sendable: written once on the loop thread before the awaiting test reads it.
    var call: PendingCall<Int>?
}

final class Flag: @unchecked Sendable {
    // @unchecked Sendable: guarded by the lock.
    private let lock = NSLock()
    private var raised = false
    func set() { lock.withLock { raised = true } }
    var value: Bool { lock.withLock { raised } }
}
