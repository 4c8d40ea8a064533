internal import CGLib
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// The loop thread of the D-Bus transport's connections: a GLib main loop on a private
/// `GMainContext`, started on first use and shared by every connection of the process
/// (SecretService's, the Secret portal's), through ``shared``. (The TPM's synchronous name check,
/// ``BlockingBus``, does not use it: it runs on the TPM's own thread with a context of its own.)
///
/// What runs here, and only here:
/// - every deadline (one shared timer, ``LoopThread/timekeeper``) and every cancellation: a call that ends
///   early ends on this thread, so whatever it has to undo (a prompt to dismiss, a
///   `GCancellable` to cancel) happens here, never on the caller's thread and never on the
///   application's default main context;
/// - opening D-Bus connections, whose `closed` signal is then delivered here.
///
/// Nothing here blocks: GIO's asynchronous entry points and timers only. D-Bus calls themselves do not
/// pass through this thread: the calling task sends its message and GDBus's reader thread hands
/// the reply back (``BusConnection``).
package final class LoopThread: Sendable {
    /// The process-wide loop; started on first use.
    package static let shared = LoopThread()

    private let context: LoopBound<OpaquePointer>
    /// Work waiting for the loop, and whether a wake-up is already scheduled: one wake-up for a
    /// batch, and a hand-over ThreadSanitizer can see.
    private let queue = Locked<(work: [@Sendable () -> Void], wakeUpScheduled: Bool)>(([], false))

    private init() {
        let context = g_main_context_new()!
        self.context = LoopBound(context)
        let started = LoopBound(context)
        startThread(named: "dbus-transport") {
            // Signals are the application's business: this thread never takes one (whatever mask
            // the thread that started it had), so the application's handlers run on its own threads.
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_BLOCK, &all, nil)
            g_main_context_push_thread_default(started.value)
            let loop = g_main_loop_new(started.value, 0)
            g_main_loop_run(loop)
        }
    }

    /// Whether the caller is on the loop thread.
    package var isCurrent: Bool { g_main_context_is_owner(context.value) != 0 }

    /// Checks, in debug builds, an invariant that says "this runs on the loop thread".
    package func assertCurrent(_ what: @autoclosure () -> String = "", file: StaticString = #fileID, line: UInt = #line) {
        assert(isCurrent, "must run on the D-Bus transport's loop thread: \(what())", file: file, line: line)
    }

    /// Runs `body` on the loop thread: inline when already there, otherwise soon, in the order
    /// submitted. Thread-safe.
    package func perform(_ body: @escaping @Sendable () -> Void) {
        if isCurrent {
            body()
            return
        }
        let wake = queue.withLock { queue -> Bool in
            queue.work.append(body)
            if queue.wakeUpScheduled { return false }
            queue.wakeUpScheduled = true
            return true
        }
        guard wake else { return }
        g_main_context_invoke_full(context.value, G_PRIORITY_DEFAULT, { data in
            Unmanaged<LoopThread>.fromOpaque(data!).takeUnretainedValue().drain()
            return 0  // G_SOURCE_REMOVE
        }, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    private func drain() {
        let work = queue.withLock { queue -> [@Sendable () -> Void] in
            defer { queue.work = []; queue.wakeUpScheduled = false }
            return queue.work
        }
        for body in work { body() }
    }

    /// Calls `fire` on the loop thread after `delay` (clamped to what GLib can represent).
    /// Callable from any thread: `g_source_attach` is thread-safe and wakes the loop.
    package func afterDelay(_ delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        let source = g_timeout_source_new(Self.milliseconds(delay))!
        g_source_set_callback(source, { data in
            Unmanaged<LoopWork>.fromOpaque(data!).takeUnretainedValue().body()
            return 0  // G_SOURCE_REMOVE
        }, Unmanaged.passRetained(LoopWork(fire)).toOpaque(), { data in
            Unmanaged<LoopWork>.fromOpaque(data!).release()
        })
        g_source_attach(source, context.value)
        g_source_unref(source)  // the context keeps it until it has fired
    }

    /// Calls `ready` on the loop thread whenever `descriptor` is readable (or hung up), until it
    /// returns false or the returned handle is cancelled. Callable from any thread.
    package func watch(readable descriptor: Int32, _ ready: @escaping @Sendable () -> Bool) -> WatchHandle {
        let condition = GIOCondition(rawValue: G_IO_IN.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue)
        let source = g_unix_fd_source_new(descriptor, condition)!
        let callback: @convention(c) (Int32, GIOCondition, gpointer?) -> gboolean = { _, _, data in
            Unmanaged<LoopCondition>.fromOpaque(data!).takeUnretainedValue().body() ? 1 : 0
        }
        g_source_set_callback(source, unsafeBitCast(callback, to: GSourceFunc.self),
                              Unmanaged.passRetained(LoopCondition(ready)).toOpaque(), { data in
            Unmanaged<LoopCondition>.fromOpaque(data!).release()
        })
        g_source_attach(source, context.value)
        return WatchHandle(source: LoopBound(source))
    }

    /// A delay in whole milliseconds, rounded up, clamped to 0...UInt32.max: a `Duration` of
    /// `.seconds(Int64.max)` must not trap.
    package static func milliseconds(_ delay: Duration) -> UInt32 {
        let (seconds, attoseconds) = delay.components
        guard seconds >= 0 else { return 0 }
        let (wholeMilliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow || wholeMilliseconds >= Int64(UInt32.max) { return UInt32.max }
        let fraction = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return UInt32(clamping: wholeMilliseconds + max(0, fraction))
    }
}

/// A C pointer moved between threads (to the loop thread, usually).
///
/// `@unchecked Sendable`: the value is only moved between threads, never used concurrently in a
/// way GLib forbids: whatever dereferences it runs on the loop thread (``LoopThread/perform(_:)``),
/// except the GLib calls documented as thread-safe that take it from any thread (the main
/// context's `g_main_context_is_owner` and `g_main_context_invoke_full`, `g_source_attach`).
package struct LoopBound<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

/// A watch of ``LoopThread/watch(readable:_:)``; `cancel` stops it (from any thread).
package struct WatchHandle: Sendable {
    let source: LoopBound<UnsafeMutablePointer<GSource>>
    package func cancel() {
        // g_source_destroy is thread-safe; the context drops its reference once destroyed.
        g_source_destroy(source.value)
        g_source_unref(source.value)
    }
}

private final class LoopCondition: Sendable {
    let body: @Sendable () -> Bool
    init(_ body: @escaping @Sendable () -> Bool) { self.body = body }
}

private final class LoopWork: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Starts a thread named `name` (at most 15 characters: Linux's limit), through GLib, which names
/// it; the thread is not joined.
private func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    precondition(name.utf8.count <= 15, "Linux thread names have at most 15 characters")
    let thread = g_thread_new(name, { data in
        Unmanaged<LoopWork>.fromOpaque(data!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(LoopWork(body)).toOpaque())
    g_thread_unref(thread)
}
