// log-probe MARKER: logs one message per level through `LogManager.standard`, each carrying MARKER,
// so a test can see which levels reach the journal and standard error of a real process, with its
// real environment (PINGSTORAGE_LOG_DEBUG) and the real journal socket path.
import PingLogger

let marker = CommandLine.arguments.dropFirst().first ?? "marker"
LogManager.logger = LogManager.standard
LogManager.logger.d("debug \(marker)")
LogManager.logger.i("info \(marker)")
LogManager.logger.w("warning \(marker)", error: nil)
LogManager.logger.e("error \(marker)", error: nil)
