// readme-snippets: turns README.md's ```swift blocks into Swift that the ReadmeSnippetTests target
// compiles, so that every block is checked by the compiler, not only claimed to compile.
//
//     swift run readme-snippets                  print the generated file
//     swift run readme-snippets --write          write it to Tests/ReadmeSnippetTests/ReadmeSnippets.swift
//     swift run readme-snippets --manifests DIR  write each Package.swift block to DIR/line-N/Package.swift
//     --readme PATH                              read PATH instead of README.md
//
// A block whose first line is `// swift-tools-version…` is a package manifest: it is not part of
// the generated file; ReadmeSnippetTests compiles it with `swift package dump-package`.
// Every other block becomes `enum ReadmeBlockN`, nested in the enum of the block before it, so a
// later block sees the types of earlier ones (as a reader does) and repeated names do not clash.
// Its `import`s (also inside `#if`) go to the top of the file, its declarations (types, functions)
// become the enum's members, and its statements the body of `static func run() async throws`.
// `#sourceLocation` makes compiler errors point at README.md's lines.
import Foundation

struct Block {
    /// The README line number of the block's first code line (1-based).
    let firstLine: Int
    let lines: [String]
    var isManifest: Bool { lines.first?.hasPrefix("// swift-tools-version") == true }
}

enum ChunkKind { case imports, declaration, statement }

struct Chunk {
    let kind: ChunkKind
    let firstLine: Int
    var lines: [String]
}

struct GeneratorError: Error, CustomStringConvertible {
    let description: String
}

/// The ```swift blocks of a Markdown text.
func swiftBlocks(of markdown: String) -> [Block] {
    var blocks: [Block] = []
    var current: (firstLine: Int, lines: [String])?
    for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if var block = current {
            if trimmed == "```" {
                blocks.append(Block(firstLine: block.firstLine, lines: block.lines))
                current = nil
            } else {
                block.lines.append(String(line))
                current = block
            }
        } else if trimmed == "```swift" {
            current = (index + 2, [])
        }
    }
    return blocks
}

/// The change in bracket depth over `line`, ignoring string literals and `//` comments.
func depthChange(_ line: String) -> Int {
    var depth = 0, inString = false, escaped = false
    var previous: Character = " "
    for character in line {
        if inString {
            if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
        } else {
            if character == "/" && previous == "/" { break }
            switch character {
            case "\"": inString = true
            case "(", "[", "{": depth += 1
            case ")", "]", "}": depth -= 1
            default: break
            }
        }
        previous = character
    }
    return depth
}

let declarationKeywords: Set<String> = ["struct", "class", "enum", "actor", "protocol", "func", "typealias"]
let modifiers: Set<String> = ["public", "internal", "fileprivate", "private", "final", "open", "nonisolated", "indirect"]

/// What a line at depth 0 starts.
func chunkKind(of line: String) throws -> ChunkKind {
    let words = line.split(separator: " ").map(String.init)
    guard let firstWord = words.first(where: { !$0.hasPrefix("@") && !modifiers.contains($0) }) else { return .declaration }
    if firstWord == "import" { return .imports }
    if firstWord == "extension" {
        throw GeneratorError(description: "extensions cannot be nested in a block's enum; write the member in the type instead")
    }
    return declarationKeywords.contains(firstWord) ? .declaration : .statement
}

/// Splits a block into imports, declarations and statements, each chunk a run of whole lines.
func chunks(of block: Block) throws -> [Chunk] {
    var result: [Chunk] = []
    var pending: [String] = []          // comments and blank lines, kept with the chunk they precede
    var pendingStart = block.firstLine
    var depth = 0
    var conditionalDepth = 0            // inside #if … #endif
    for (offset, line) in block.lines.enumerated() {
        let number = block.firstLine + offset
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        let continues = trimmed.hasPrefix(".") || trimmed.hasPrefix("else") || trimmed.hasPrefix("catch")
            || trimmed.hasPrefix("&&") || trimmed.hasPrefix("||")
        if depth == 0 && conditionalDepth == 0 && !continues {
            if trimmed.isEmpty || trimmed.hasPrefix("//") {
                if pending.isEmpty { pendingStart = number }
                pending.append(line)
                continue
            }
            let kind: ChunkKind
            if trimmed.hasPrefix("#if") {
                kind = .imports
            } else {
                do { kind = try chunkKind(of: trimmed) } catch let error as GeneratorError {
                    throw GeneratorError(description: "README.md:\(number): \(error.description)")
                }
            }
            result.append(Chunk(kind: kind, firstLine: pending.isEmpty ? number : pendingStart, lines: pending + [line]))
            pending = []
        } else if result.isEmpty {
            throw GeneratorError(description: "README.md:\(number): a block cannot start with a continuation line")
        } else {
            result[result.count - 1].lines.append(contentsOf: pending + [line])
            pending = []
        }
        if trimmed.hasPrefix("#if") { conditionalDepth += 1 }
        if trimmed.hasPrefix("#endif") { conditionalDepth -= 1 }
        if conditionalDepth > 0, result.last?.kind == .imports, !trimmed.hasPrefix("#"), !trimmed.hasPrefix("import ") {
            throw GeneratorError(description: "README.md:\(number): only imports can be inside #if at the top of a block")
        }
        depth += depthChange(line)
    }
    return result
}

/// The Swift file compiled by ReadmeSnippetTests.
func generatedFile(from blocks: [Block]) throws -> String {
    let code = blocks.filter { !$0.isManifest }
    var imports: [String] = []
    var body: [String] = []
    func located(_ chunk: Chunk) -> [String] {
        ["#sourceLocation(file: \"README.md\", line: \(chunk.firstLine))"] + chunk.lines + ["#sourceLocation()"]
    }
    for (index, block) in code.enumerated() {
        let parts = try chunks(of: block)
        for chunk in parts where chunk.kind == .imports {
            let lines = chunk.lines.filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                .filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            let text = lines.joined(separator: "\n")
            if !imports.contains(text) { imports.append(text) }
        }
        body.append("")
        body.append("// README.md, the block at line \(block.firstLine)")
        body.append("enum ReadmeBlock\(index + 1) {")
        for chunk in parts where chunk.kind == .declaration { body += located(chunk) }
        body.append("static func run() async throws {")
        for chunk in parts where chunk.kind == .statement { body += located(chunk) }
        body.append("}")
    }
    body += Array(repeating: "}", count: code.count)
    let header = """
        // Generated from README.md's ```swift blocks by `swift run readme-snippets --write`: do not edit.
        // ReadmeSnippetTests fails when this file differs from what README.md generates now, and the
        // target does not build when a block stops compiling. See TestSupport/readme-snippets/main.swift.
        """
    return ([header] + imports + body).joined(separator: "\n") + "\n"
}

/// The text of each manifest block, by README line.
func manifests(from blocks: [Block]) -> [(line: Int, text: String)] {
    blocks.filter(\.isManifest).map { ($0.firstLine, $0.lines.joined(separator: "\n") + "\n") }
}

// MARK: The command

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("readme-snippets: \(message)\n".utf8))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var readmePath = "README.md"
var write = false
var manifestDirectory: String?
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--readme":
        guard !arguments.isEmpty else { fail("--readme needs a path") }
        readmePath = arguments.removeFirst()
    case "--write": write = true
    case "--manifests":
        guard !arguments.isEmpty else { fail("--manifests needs a directory") }
        manifestDirectory = arguments.removeFirst()
    default: fail("unknown argument \(argument); see the comment at the top of TestSupport/readme-snippets/main.swift")
    }
}

guard let data = FileManager.default.contents(atPath: readmePath) else { fail("cannot read \(readmePath)") }
let blocks = swiftBlocks(of: String(decoding: data, as: UTF8.self))
do {
    if let manifestDirectory {
        for manifest in manifests(from: blocks) {
            let directory = URL(fileURLWithPath: manifestDirectory).appendingPathComponent("line-\(manifest.line)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(manifest.text.utf8).write(to: directory.appendingPathComponent("Package.swift"))
        }
    } else {
        let file = try generatedFile(from: blocks)
        if write {
            let output = URL(fileURLWithPath: readmePath).deletingLastPathComponent()
                .appendingPathComponent("Tests/ReadmeSnippetTests/ReadmeSnippets.swift")
            try Data(file.utf8).write(to: output)
        } else {
            FileHandle.standardOutput.write(Data(file.utf8))
        }
    }
} catch let error as GeneratorError {
    fail(error.description)
} catch {
    fail("\(error)")
}
