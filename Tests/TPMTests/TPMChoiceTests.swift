import Testing
@testable import TPM

/// Which TPM connection is chosen, with the machine's answers given by the test.
@Suite("TPM connection choice")
struct TPMChoiceTests {
    @Test func unsetTakesTheDeviceFirstThenTabrmdOnTheSystemBus() {
        #expect(TPMChoice.resolve(nil, opens: { $0 == "/dev/tpmrm0" }, tabrmdAnswers: { _ in true }) == .device(path: "/dev/tpmrm0"))
        #expect(TPMChoice.resolve("", opens: { _ in false }, tabrmdAnswers: { $0 == "bus_type=system" })
                == .tabrmd(configuration: "bus_type=system"))
        guard case .none(let reason) = TPMChoice.resolve(nil, opens: { _ in false }, tabrmdAnswers: { _ in false }) else {
            Issue.record("no device and no tabrmd must be no TPM")
            return
        }
        #expect(reason.contains("/dev/tpmrm0") && reason.contains("PINGSTORAGE_TPM_TCTI"))
    }

    @Test func anExplicitChoiceIsTakenOnlyWhenItAnswers() {
        #expect(TPMChoice.resolve("device:/dev/tpm0", opens: { $0 == "/dev/tpm0" }) == .device(path: "/dev/tpm0"))
        #expect(TPMChoice.resolve("device", opens: { $0 == "/dev/tpmrm0" }) == .device(path: "/dev/tpmrm0"))
        #expect(TPMChoice.resolve("tabrmd:bus_type=session", opens: { _ in true }, tabrmdAnswers: { $0 == "bus_type=session" })
                == .tabrmd(configuration: "bus_type=session"))
        // An explicit choice is never replaced by another connection that would answer.
        #expect(TPMChoice.resolve("tabrmd", opens: { _ in true }, tabrmdAnswers: { _ in false }).library == nil)
        #expect(TPMChoice.resolve("device:/x", opens: { $0 != "/x" }, tabrmdAnswers: { _ in true }).library == nil)
        #expect(TPMChoice.resolve("none", opens: { _ in true }, tabrmdAnswers: { _ in true }).library == nil)
        guard case .none(let reason) = TPMChoice.resolve("swtpm:port=1", opens: { _ in true }, tabrmdAnswers: { _ in true }) else {
            Issue.record("an unknown TCTI must be no TPM")
            return
        }
        #expect(reason.contains("device[:PATH], tabrmd[:CONFIGURATION] or none"))
    }

    @Test func aTabrmdOnABusThatIsNotThereDoesNotAnswer() {
        #expect(!TPMChoice.tabrmdOwnsItsName("bus_type=nonsense"))
        #expect(!TPMChoice.deviceOpens("/nonexistent/tpmrm0"))
    }
}
