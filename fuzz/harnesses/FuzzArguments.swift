// libFuzzer harness: ping-keyring's argument parser (ArgumentParser.parse and requestsJSON).
//
// The input is an argument vector: arguments separated by NUL bytes (invalid UTF-8 is decoded
// with replacement characters, as Swift's CommandLine.arguments does). Checks beyond "no crash":
// parsing is a pure function (the same vector parses to the same result twice), and an error is
// a usage error (exit status 2), never anything else.
@testable import PingKeyringCore

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    // Lazy one-time initialisations (globals, tables) happen here, not in the first input, whose
    // unfreed allocations libFuzzer would report as a leak.
    for input: [UInt8] in [Array("get\u{0}--service\u{0}s\u{0}--account\u{0}a".utf8), Array("--help".utf8), Array("x".utf8)] { _ = input.withUnsafeBufferPointer { fuzzArguments($0.baseAddress, $0.count) } }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzArguments(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: data == nil ? 0 : size)
    let arguments = bytes.isEmpty
        ? [] : bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    _ = ArgumentParser.requestsJSON(arguments)
    let first = Result { () throws(ToolError) in try ArgumentParser.parse(arguments) }
    let second = Result { () throws(ToolError) in try ArgumentParser.parse(arguments) }
    switch (first, second) {
    case (.success(let a), .success(let b)):
        guard a == b else { fatalError("the same arguments parsed twice differ: \(arguments)") }
    case (.failure(let a), .failure(let b)):
        guard a.status == .usage, a == b else { fatalError("not a stable usage error: \(a) for \(arguments)") }
    default:
        fatalError("the same arguments parsed once and failed once: \(arguments)")
    }
    return 0
}
