import DBusTransport
import Locking

/// What one connection's traffic tells of the Secret Service provider, as the transport hands it
/// over (``BusObserver``: on GDBus's reader thread, in the order the messages arrived, each before
/// the reply that follows it is delivered): who owns `org.freedesktop.secrets`, the count of
/// changes behind ``ChangeToken``, the prompts awaited, and whether the provider stopped answering
/// (``ProviderSilence``).
///
/// Signals are believed only from whom they can come from: `NameOwnerChanged` from the bus
/// itself (`org.freedesktop.DBus`), Secret Service signals from the provider process this
/// connection knows as the owner. Anyone can send a signal to our unique name; such signals are
/// ignored.
final class ProviderTraffic: BusObserver {
    private struct State {
        var owner: String?
        /// Prompts awaited on this connection: how many, and when the last one was.
        var promptsAwaited: UInt64 = 0
        var lastPrompt: ContinuousClock.Instant?
        /// The provider that stopped answering, if it has (the one record of its health).
        var silence: ProviderSilence?
        /// What the provider announced about items and collections (``ItemAnnouncement``), and the
        /// losses: its count is the count behind ``ChangeToken``, one announcement per change.
        var announcements = AnnouncementLog()
    }

    /// Tells tokens of different connections apart (random, so a new connection at the same
    /// address never matches an old one's tokens).
    let connectionID = UInt64.random(in: 1...UInt64.max)
    private let state = Locked(State())
    /// The router of the connection, to end what waits on a provider that left (set once, right
    /// after the connection opens and before any call is sent). Weak: the router holds its
    /// observer, this traffic, and the connection holds the router.
    private let router = Locked<WeakRouter>(WeakRouter())
    private struct WeakRouter: Sendable {
        weak var router: MessageRouter?
    }

    func attach(_ router: MessageRouter) { self.router.withLock { $0.router = router } }

    /// The provider's unique name as last reported by the bus.
    var owner: String? { state.withLock { $0.owner } }

    /// The change token now.
    var token: ChangeToken { state.withLock { ChangeToken(connection: connectionID, count: $0.announcements.count) } }

    /// How far the announcements have come now.
    var announcementMark: AnnouncementMark {
        state.withLock { AnnouncementMark(connection: connectionID, count: $0.announcements.count) }
    }

    /// The announcements heard since `mark`; nil when `mark` is another connection's or some are gone.
    func announcements(since mark: AnnouncementMark) -> [ItemAnnouncement]? {
        guard mark.connection == connectionID else { return nil }
        return state.withLock { $0.announcements.since(mark.count) }
    }

    /// Records the answer to GetNameOwner of `org.freedesktop.secrets` (on the reader thread, in order).
    func ownerAnswered(_ owner: String) {
        state.withLock { state in
            if state.owner != owner {
                state.owner = owner
                state.announcements.append(ItemAnnouncement(kind: .lost, item: nil))
            }
        }
    }

    /// Records that a prompt's `Completed` is awaited (a provider may hold its answers while it
    /// shows a dialog: no reply then is a person deciding, not a stopped provider).
    func promptAwaited() {
        state.withLock { state in
            state.promptsAwaited += 1
            state.lastPrompt = .now
        }
    }

    /// The provider's silence, when `owner` is the provider and it has been silent since a call
    /// it did not answer.
    func silence(of owner: String) -> ProviderSilence? {
        state.withLock { state in state.silence.flatMap { $0.provider == owner && state.owner == owner ? $0 : nil } }
    }

    // MARK: BusObserver

    func signal(_ signal: IncomingSignal) {
        if signal.sender == "org.freedesktop.DBus" {
            if signal.interface == "org.freedesktop.DBus", signal.member == "NameOwnerChanged", let body = signal.body,
               body.isOfType("(sss)"), body.child(0).string == "org.freedesktop.secrets" {
                ownerChanged(from: body.child(1).string, to: body.child(2).string)
            }
            return
        }
        state.withLock { state in
            guard signal.sender == state.owner else { return }
            state.silence = nil  // it speaks
            switch (signal.interface, signal.member) {
            case ("org.freedesktop.Secret.Collection", "ItemCreated"), ("org.freedesktop.Secret.Collection", "ItemDeleted"),
                 ("org.freedesktop.Secret.Collection", "ItemChanged"):
                // ItemChanged counts as much as the other two: it does not say what changed, and
                // an item whose attributes changed may now be found, or no longer found, by a
                // search (KeePassXC announces a new item's attributes after the item; `ping-keyring
                // apps move` gives an item to another app). KWallet also announces every
                // SetSecret so, KeePassXC most (not while it saves its database), GNOME Keyring
                // none (ProviderQuirks.announcesSecretChanges).
                state.announcements.append(Self.announcement(signal))
            case ("org.freedesktop.Secret.Service", let member) where member.hasPrefix("Collection"):
                // CollectionCreated/Deleted/Changed (lock state among others): KWallet, locked,
                // still answers GetSecret with an empty secret, so nothing learned about a
                // collection's items survives this.
                state.announcements.append(ItemAnnouncement(kind: .lost, item: nil))
            default:
                break
            }
        }
    }

    func reply(from sender: String?, isError: Bool) {
        // It answers (an error the bus sends in its name, such as NoReply, is no answer).
        state.withLock { state in
            if let sender, sender == state.owner { state.silence = nil }
        }
    }

    /// A call got no reply by its deadline: the provider is recorded as silent when the call went
    /// to it and no prompt was open at any time since it was sent (``ProviderSilence``).
    func noReply(to call: MessageRouter.PendingReply) {
        let promptOpen = router.withLock { $0.router }?.isAwaiting(interface: "org.freedesktop.Secret.Prompt") ?? false
        state.withLock { state in
            let waited = "got no reply within \((ContinuousClock.now - call.sent).secondsText)"
            let promptSince = promptOpen || state.lastPrompt.map { $0 >= call.sent } == true
            guard let owner = state.owner, call.destination == owner, !promptSince else { return }
            if var silence = state.silence, silence.provider == owner {
                if call.operation == ProviderSilence.probeOperation {
                    silence.probes += 1
                    silence.lastProbe = waited
                }
                state.silence = silence
            } else {
                state.silence = ProviderSilence(provider: owner, since: call.sent, unansweredCall: "\(call.callDescription) \(waited)")
            }
        }
    }

    func closed() {
        state.withLock { state in
            state.announcements.append(ItemAnnouncement(kind: .lost, item: nil))
        }
    }

    /// The announcement a collection signal makes (its item, when its body names one).
    private static func announcement(_ signal: IncomingSignal) -> ItemAnnouncement {
        let kind: ItemAnnouncement.Kind = switch signal.member {
        case "ItemCreated": .created
        case "ItemDeleted": .deleted
        default: .changed
        }
        let item = signal.body.flatMap { $0.isOfType("(o)") ? try? ItemPath($0.child(0).string) : nil }
        // An announcement whose item cannot be read may be about any item: as if lost.
        return item.map { ItemAnnouncement(kind: kind, item: $0) } ?? ItemAnnouncement(kind: .lost, item: nil)
    }

    /// The bus says `org.freedesktop.secrets` changed hands: calls and prompts addressed to the
    /// old owner end now (libsecret and the bus would leave a prompt waiting forever).
    private func ownerChanged(from oldOwner: String, to newOwner: String) {
        state.withLock { state in
            state.owner = newOwner.isEmpty ? nil : newOwner
            state.silence = nil
            state.announcements.append(ItemAnnouncement(kind: .lost, item: nil))
        }
        guard !oldOwner.isEmpty, let router = router.withLock({ $0.router }) else { return }
        router.fail(awaitingFrom: oldOwner) { operation in
            BusError(.closed, operation: operation, text: "\(oldOwner) left the bus before it answered")
        }
    }
}
