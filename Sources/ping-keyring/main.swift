// ping-keyring: inspect and manage what PingStorage keeps in the keyring (Secret Service or file keyring).
// Everything but writing the result out lives in PingKeyringCore (`ping-keyring --help`).
import Foundation
import PingKeyringCore

let outcome = await PingKeyring.run(
    arguments: Array(CommandLine.arguments.dropFirst()),
    environment: ProcessInfo.processInfo.environment,
    readInput: {
        if isatty(STDIN_FILENO) == 1 {
            FileHandle.standardError.write(Data("ping-keyring: reading the value from stdin (end with Ctrl-D)\n".utf8))
        }
        return FileHandle.standardInput.readDataToEndOfFile()
    })
FileHandle.standardOutput.write(outcome.standardOutput)
FileHandle.standardError.write(Data(outcome.standardError.utf8))
exit(outcome.status)
