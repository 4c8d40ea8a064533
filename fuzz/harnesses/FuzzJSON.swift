// libFuzzer harness: ping-keyring's JSON reader (JSONValue(parsing:), the strict parser that
// decides whether a secret is embedded as JSON in `get --json`).
//
// Checks beyond "no crash": a document that parses prints (JSONValue.document) to text that
// parses again and prints the same, so the printer and the parser agree.
@testable import PingKeyringCore

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    // Lazy one-time initialisations (globals, tables) happen here, not in the first input, whose
    // unfreed allocations libFuzzer would report as a leak.
    for input: [UInt8] in [Array("{\"a\": [1, \"b\", null]}".utf8)] { _ = input.withUnsafeBufferPointer { fuzzJSON($0.baseAddress, $0.count) } }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: data == nil ? 0 : size)
    guard let value = JSONValue(parsing: bytes) else { return 0 }
    let printed = value.document
    guard let again = JSONValue(parsing: Array(printed.utf8)) else {
        fatalError("the printed document does not parse again: \(printed)")
    }
    guard again.document == printed else {
        fatalError("printing is not stable: \(printed) then \(again.document)")
    }
    return 0
}
