// libFuzzer harness: SecuredKeyEncryptor's envelope (PingStorageCrypto's Envelope).
//
// The first byte chooses the mode; the rest is the input.
// - Even: the input is an envelope. isEnvelope, header(of:) and open(_:key:associatedData:) with a
//   fixed key must cope with it; a failure is an EnvelopeError; an envelope that opens has the
//   fixed key's ID and its plaintext's length (the seeds are seals with that key: the fuzzer's
//   mutations of them must all fail).
// - Odd: the input is a plaintext. It is sealed with the fixed key, must open to itself and have
//   the header it was sealed with; then one byte of the envelope, chosen by the input, is changed,
//   and the result must not open.
// FUZZ_WRITE_SEEDS=DIR writes seeds (envelopes sealed with the fixed key) to DIR and exits.
import Foundation
import PingStorageCrypto

let key = try! SymmetricKey(data: Data((0..<32).map { UInt8($0) &* 3 }))
let keyID = try! KeyID(data: Data((0..<16).map { UInt8($0) &+ 0x40 }))
let associatedData = Data("com.example.service\u{0}alice".utf8)

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    let seeds = [("empty", Data()), ("token", Data("{\"access_token\":\"abc\",\"expires_in\":3600}".utf8)),
                 ("bytes-100", Data((0..<100).map { UInt8($0) }))].flatMap { name, plaintext in
        [("\(name).envelope", Data([0]) + (try! Envelope.seal(plaintext, key: key, keyID: keyID, associatedData: associatedData))),
         ("\(name).plaintext", Data([1]) + plaintext)]
    }
    if let directory = ProcessInfo.processInfo.environment["FUZZ_WRITE_SEEDS"] {
        for (name, bytes) in seeds { try! bytes.write(to: URL(fileURLWithPath: "\(directory)/\(name)")) }
        exit(0)
    }
    // Lazy one-time initialisations happen here, not in the first input, whose unfreed
    // allocations libFuzzer would report as a leak.
    for (_, bytes) in seeds { _ = bytes.withUnsafeBytes { fuzzEnvelope($0.bindMemory(to: UInt8.self).baseAddress, $0.count) } }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    let input = Data(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 1 == 0 {
        parse(input)
    } else {
        roundTrip(input, change: data[0] >> 1)
    }
    return 0
}

func parse(_ input: Data) {
    let claimed = Envelope.isEnvelope(input)
    do {
        let header = try Envelope.header(of: input)
        guard claimed, header.version == Envelope.currentVersion else { fatalError("a header read from a non-envelope") }
    } catch is EnvelopeError {
    } catch {
        fatalError("header(of:) threw \(error)")
    }
    do {
        let plaintext = try Envelope.open(input, key: key, associatedData: associatedData)
        // Opened: the key ID is authenticated, so it is the one every seed was sealed with.
        guard try Envelope.header(of: input).keyID == keyID, input.count == plaintext.count + Envelope.overheadByteCount else {
            fatalError("an envelope opened with another key ID or length")
        }
    } catch is EnvelopeError {
    } catch {
        fatalError("open threw \(error)")
    }
}

func roundTrip(_ plaintext: Data, change: UInt8) {
    do {
        let envelope = try Envelope.seal(plaintext, key: key, keyID: keyID, associatedData: associatedData)
        let header = try Envelope.header(of: envelope)
        guard header.version == Envelope.currentVersion, header.keyID == keyID,
              try Envelope.open(envelope, key: key, associatedData: associatedData) == plaintext else {
            fatalError("a sealed plaintext does not open to itself")
        }
        var changed = envelope
        let index = changed.startIndex + Int(change) * 7919 % changed.count
        changed[index] ^= 1 << (change & 7)
        if (try? Envelope.open(changed, key: key, associatedData: associatedData)) != nil {
            fatalError("an envelope with byte \(index) changed opened")
        }
    } catch {
        fatalError("sealing and opening threw \(error)")
    }
}

