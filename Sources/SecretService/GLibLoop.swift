internal import CLibSecret
internal import CGcrypt
import Locking
import Foundation

/// The one thread in the process that runs libsecret.
///
/// libsecret's asynchronous API delivers every callback on the GLib main context that was the
/// thread-default one when the call started. This type owns a private `GMainContext`, runs it on a
/// thread of its own, and starts every libsecret call from that thread, so that
/// - no libsecret or GDBus code ever runs on Swift's cooperative thread pool,
/// - no callback lands on the application's own (default) GLib main context,
/// - many calls are in flight at once on the one D-Bus connection (they are pipelined, not
///   serialized behind a blocking call).
///
/// Nothing that runs on this thread may block: only libsecret's asynchronous entry points are used.
final class GLibLoop: Sendable {
    /// The process-wide loop; started on first use.
    static let shared = GLibLoop()

    private let context: LoopBound<OpaquePointer>

    private init() {
        // libsecret initialises libgcrypt on this thread's first session unless it finds it
        // finished; finishing it here, before the thread exists, is what keeps the two from
        // racing inside libgcrypt's unlocked global_init (see CGcrypt.h).
        _ = cgcrypt_initialize(nil)
        let context = g_main_context_new()!
        let loop = g_main_loop_new(context, 0)!
        self.context = LoopBound(context)
        let loopThreadState = LoopBound((context: context, loop: loop))
        let thread = Thread {
            // Makes this context the one libsecret's async calls report back to.
            g_main_context_push_thread_default(loopThreadState.value.context)
            g_main_loop_run(loopThreadState.value.loop)
        }
        thread.name = "PingStorage.libsecret"
        thread.start()
    }

    /// Work waiting for the loop, and whether a wake-up is already scheduled. Handing work over
    /// through this lock (rather than through GLib's own locking alone) batches wake-ups and lets
    /// ThreadSanitizer see that what one thread prepared is visible to the loop thread.
    private let queue = Locked<(work: [@Sendable () -> Void], wakeUpScheduled: Bool)>(([], false))

    /// Runs `body` on the loop thread: inline when already there, otherwise as soon as the loop
    /// is idle, in the order submitted. Thread-safe.
    func perform(_ body: @escaping @Sendable () -> Void) {
        if g_main_context_is_owner(context.value) != 0 {
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
        let this = Unmanaged.passUnretained(self).toOpaque()
        g_main_context_invoke_full(context.value, G_PRIORITY_DEFAULT, { data in
            Unmanaged<GLibLoop>.fromOpaque(data!).takeUnretainedValue().drain()
            return 0  // G_SOURCE_REMOVE
        }, this, nil)
    }

    /// Runs everything queued (on the loop thread).
    private func drain() {
        let work = queue.withLock { queue -> [@Sendable () -> Void] in
            let work = queue.work
            queue.work = []
            queue.wakeUpScheduled = false
            return work
        }
        for body in work { body() }
    }
}

extension GLibLoop {
    /// Calls `fire` on the loop thread after `delay`, unless the returned handle is cancelled
    /// first. Callable from any thread (`g_source_attach` is thread-safe; from another thread it
    /// wakes the loop to take the new timer into account).
    func addTimeout(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> TimeoutHandle {
        let source = timeoutSource(after: delay, fire)
        g_source_attach(source, context.value)
        return TimeoutHandle(source: source)
    }

    /// Calls `fire` on the loop thread after `delay`; it cannot be cancelled. From any thread.
    func attachTimeout(after delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        let source = timeoutSource(after: delay, fire)
        g_source_attach(source, context.value)
        g_source_unref(source)  // the context keeps it until it has fired
    }

    private func timeoutSource(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> UnsafeMutablePointer<GSource> {
        let milliseconds = UInt32(clamping: delay.components.seconds * 1000
                                  + delay.components.attoseconds / 1_000_000_000_000_000 + 1)
        let source = g_timeout_source_new(milliseconds)!
        g_source_set_callback(source, { data in
            Unmanaged<LoopWork>.fromOpaque(data!).takeUnretainedValue().body()
            return 0  // G_SOURCE_REMOVE
        }, Unmanaged.passRetained(LoopWork(fire)).toOpaque(), { data in
            Unmanaged<LoopWork>.fromOpaque(data!).release()
        })
        return source
    }
}

/// A pending timeout on the loop. `@unchecked Sendable`: GLib documents `g_source_destroy` and
/// `g_source_unref` as thread-safe, and the handle releases the source exactly once.
final class TimeoutHandle: @unchecked Sendable {
    private let source: UnsafeMutablePointer<GSource>
    init(source: UnsafeMutablePointer<GSource>) { self.source = source }

    /// Stops the timeout from firing; harmless after it fired.
    func cancel() { g_source_destroy(source) }

    deinit {
        g_source_destroy(source)
        g_source_unref(source)
    }
}

private final class LoopWork: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// A C pointer (or any value) that only the GLib loop thread dereferences.
///
/// `@unchecked Sendable` is safe because the value is only moved between threads, never used
/// concurrently: every function that dereferences it runs inside `GLibLoop.perform`.
struct LoopBound<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Owns one reference to a GObject and drops it on the loop thread.
///
/// `@unchecked Sendable`: the pointer is immutable, only dereferenced on the loop thread, and the
/// reference is released there too (GDBusProxy finalization unsubscribes signal handlers that
/// belong to the loop's main context).
final class GObjectOwner<Object>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Object>
    private let releaseOnLoop: Bool

    /// Takes ownership of one reference (a `transfer full` return). `releaseOnLoop: false` is for
    /// objects with no main-context affinity (a GCancellable), whose last unref may happen on any
    /// thread; it saves waking the loop once per call.
    init(adopting pointer: UnsafeMutablePointer<Object>, releaseOnLoop: Bool = true) {
        self.pointer = pointer
        self.releaseOnLoop = releaseOnLoop
    }

    deinit {
        guard releaseOnLoop else {
            g_object_unref(UnsafeMutableRawPointer(pointer))
            return
        }
        let raw = LoopBound(UnsafeMutableRawPointer(pointer))
        GLibLoop.shared.perform { g_object_unref(raw.value) }
    }
}
