//! The in-process hub every inbox socket listens on (spec 6.2, 6.3). Writers publish after
//! their transaction commits, so nothing is sent for a rolled-back write. A frame is
//! serialized once and shared by every connection it goes to (a reference-counted buffer:
//! queuing it copies nothing).
//!
//! Each connection has a bounded queue: when a reader is too slow to drain it, its backlog
//! is dropped and it gets one `resync` instead, so memory never grows with a slow reader.
//!
//! At most `--max-sockets` sockets are open at once: a handshake takes a [`SocketSlot`]
//! before upgrading and the socket holds it until it closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use axum::extract::ws::Utf8Bytes;
use serde::Serialize;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};

use crate::ids::{ChannelId, ConversationId, StoreId, UserId};

/// Frames a connection may have queued before it is considered lagging.
pub const QUEUE: usize = 256;

/// A connection's end of the hub: its queue of JSON text frames (each shared by every
/// connection it goes to), the flag set when frames were dropped, and the signal to close.
pub struct Listener {
    pub id: u64,
    pub rx: mpsc::Receiver<Utf8Bytes>,
    pub lagged: Arc<AtomicBool>,
    pub kick: Arc<Notify>,
}

struct Conn {
    tx: mpsc::Sender<Utf8Bytes>,
    lagged: Arc<AtomicBool>,
    kick: Arc<Notify>,
}

impl Conn {
    /// Queues a frame without waiting; a full queue marks the connection lagging (its
    /// writer then drops the backlog and sends `resync`).
    fn offer(&self, text: &Utf8Bytes) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(text.clone()) {
            self.lagged.store(true, Ordering::Release);
        }
    }
}

/// A team member's socket on one store.
pub struct Agent {
    pub user: UserId,
    /// What opened it (`session:<id>` or `api_token:<id>`), re-checked while it is open.
    pub credential: String,
    conn: Conn,
}

/// A shopper's socket, with the channel it came through.
struct Widget {
    channel: ChannelId,
    conn: Conn,
}

#[derive(Default)]
struct Room {
    agents: HashMap<u64, Agent>,
    /// How many team sockets each user has open: presence changes only with the first and
    /// the last.
    users: HashMap<UserId, usize>,
    /// Widget sockets by conversation.
    widgets: HashMap<ConversationId, HashMap<u64, Widget>>,
}

pub struct Hub {
    /// Read by every publish (from any worker at once), written as sockets open and close.
    rooms: RwLock<HashMap<StoreId, Room>>,
    next: AtomicU64,
    /// One permit per open socket (`--max-sockets`).
    slots: Arc<Semaphore>,
}

/// A place among the open sockets, taken before the upgrade and held while the socket is
/// open.
pub struct SocketSlot(#[expect(dead_code, reason = "held for its Drop")] OwnedSemaphorePermit);

/// A team socket just added: its end of the hub, the store's online team, and whether that
/// team changed (the user's first socket on the store).
pub struct Joined {
    pub listener: Listener,
    pub online: Vec<UserId>,
    pub changed: bool,
}

/// Who a frame is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The team's sockets of the store.
    Agents,
    /// The conversation's widget sockets.
    Widget,
}

/// The envelope of every event but `hello` and `pong` (spec 6.2).
#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'a str,
    store_id: StoreId,
    conversation_id: Option<ConversationId>,
    audience: &'a str,
    data: &'a T,
    origin: &'a str,
}

/// A published event, already serialized for its audience.
pub struct Frame {
    pub store: StoreId,
    pub conversation: Option<ConversationId>,
    pub audience: Audience,
    pub text: Utf8Bytes,
}

impl Frame {
    pub fn new<T: Serialize>(
        audience: Audience,
        kind: &str,
        store: StoreId,
        conversation: Option<ConversationId>,
        data: &T,
    ) -> Self {
        let text = serde_json::to_string(&Envelope {
            kind,
            store_id: store,
            conversation_id: conversation,
            audience: match audience {
                Audience::Agents => "agents",
                Audience::Widget => "widget",
            },
            data,
            origin: "server",
        })
        .expect("event data serializes");
        Self {
            store,
            conversation,
            audience,
            text: text.into(),
        }
    }
}

impl Hub {
    /// A hub that lets `max_sockets` sockets be open at once.
    pub fn new(max_sockets: usize) -> Self {
        Self {
            rooms: RwLock::default(),
            next: AtomicU64::new(0),
            slots: Arc::new(Semaphore::new(max_sockets)),
        }
    }

    /// A place for one more socket; None when `max_sockets` are open.
    pub fn reserve(&self) -> Option<SocketSlot> {
        self.slots.clone().try_acquire_owned().ok().map(SocketSlot)
    }

    fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn rooms(&self) -> RwLockReadGuard<'_, HashMap<StoreId, Room>> {
        self.rooms.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn rooms_mut(&self) -> RwLockWriteGuard<'_, HashMap<StoreId, Room>> {
        self.rooms.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn listener(&self) -> (Conn, Listener) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let (lagged, kick) = (Arc::new(AtomicBool::new(false)), Arc::new(Notify::new()));
        let conn = Conn {
            tx,
            lagged: lagged.clone(),
            kick: kick.clone(),
        };
        let l = Listener {
            id: self.next_id(),
            rx,
            lagged,
            kick,
        };
        (conn, l)
    }

    /// Adds a team member's socket.
    pub fn join_agent(&self, store: StoreId, user: UserId, credential: String) -> Joined {
        let (conn, listener) = self.listener();
        let mut rooms = self.rooms_mut();
        let room = rooms.entry(store).or_default();
        room.agents.insert(
            listener.id,
            Agent {
                user,
                credential,
                conn,
            },
        );
        let sockets = room.users.entry(user).or_default();
        *sockets += 1;
        Joined {
            listener,
            changed: *sockets == 1,
            online: online(room),
        }
    }

    /// Removes a team member's socket; the store's online team as it now is when that
    /// changed (it was the user's last socket on the store).
    pub fn leave_agent(&self, store: StoreId, id: u64) -> Option<Vec<UserId>> {
        let mut rooms = self.rooms_mut();
        let room = rooms.get_mut(&store)?;
        let agent = room.agents.remove(&id)?;
        let gone = match room.users.get_mut(&agent.user) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            _ => room.users.remove(&agent.user).is_some(),
        };
        let now = gone.then(|| online(room));
        if room.agents.is_empty() && room.widgets.is_empty() {
            rooms.remove(&store);
        }
        now
    }

    /// Adds a shopper's socket on one conversation.
    pub fn join_widget(
        &self,
        store: StoreId,
        channel: ChannelId,
        conversation: ConversationId,
    ) -> Listener {
        let (conn, l) = self.listener();
        self.rooms_mut()
            .entry(store)
            .or_default()
            .widgets
            .entry(conversation)
            .or_default()
            .insert(l.id, Widget { channel, conn });
        l
    }

    /// Removes a shopper's socket; whether the conversation still has one open.
    pub fn leave_widget(&self, store: StoreId, conversation: ConversationId, id: u64) -> bool {
        let mut rooms = self.rooms_mut();
        let Some(room) = rooms.get_mut(&store) else {
            return false;
        };
        let still = room.widgets.get_mut(&conversation).is_some_and(|w| {
            w.remove(&id);
            !w.is_empty()
        });
        if !still {
            room.widgets.remove(&conversation);
        }
        if room.agents.is_empty() && room.widgets.is_empty() {
            rooms.remove(&store);
        }
        still
    }

    /// Sends each frame to its audience; never waits on a connection.
    pub fn publish(&self, frames: &[Frame]) {
        let rooms = self.rooms();
        for f in frames {
            let Some(room) = rooms.get(&f.store) else {
                continue;
            };
            match f.audience {
                Audience::Agents => {
                    for a in room.agents.values() {
                        a.conn.offer(&f.text);
                    }
                }
                Audience::Widget => {
                    let Some(conv) = f.conversation else { continue };
                    for w in room
                        .widgets
                        .get(&conv)
                        .into_iter()
                        .flat_map(HashMap::values)
                    {
                        w.conn.offer(&f.text);
                    }
                }
            }
        }
    }

    /// Closes one team socket (what opened it no longer allows it).
    pub fn close_agent(&self, store: StoreId, id: u64) {
        if let Some(a) = self.rooms().get(&store).and_then(|r| r.agents.get(&id)) {
            a.conn.kick.notify_one();
        }
    }

    /// Closes every socket (the server is stopping).
    pub fn close_all(&self) {
        for room in self.rooms().values() {
            for a in room.agents.values() {
                a.conn.kick.notify_one();
            }
            for w in room.widgets.values().flat_map(HashMap::values) {
                w.conn.kick.notify_one();
            }
        }
    }

    /// Closes the shopper sockets of a channel (turned off, deleted, or its origins changed:
    /// they reconnect and are checked again).
    pub fn close_widgets(&self, store: StoreId, channel: ChannelId) {
        if let Some(room) = self.rooms().get(&store) {
            for w in room.widgets.values().flat_map(HashMap::values) {
                if w.channel == channel {
                    w.conn.kick.notify_one();
                }
            }
        }
    }

    /// Every open team socket: (store, socket id, user, credential), for re-checking.
    pub fn agents(&self) -> Vec<(StoreId, u64, UserId, String)> {
        self.rooms()
            .iter()
            .flat_map(|(store, room)| {
                room.agents
                    .iter()
                    .map(|(id, a)| (*store, *id, a.user, a.credential.clone()))
            })
            .collect()
    }

    /// How many sockets are open (team, widget).
    pub fn open_sockets(&self) -> (usize, usize) {
        let rooms = self.rooms();
        let agents = rooms.values().map(|r| r.agents.len()).sum();
        let widgets = rooms
            .values()
            .flat_map(|r| r.widgets.values())
            .map(HashMap::len)
            .sum();
        (agents, widgets)
    }
}

/// The users with a socket open on the room's store, each once.
fn online(room: &Room) -> Vec<UserId> {
    let mut users: Vec<UserId> = room.users.keys().copied().collect();
    users.sort_unstable();
    users
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_slow_reader_is_bounded_and_marked_for_resync() {
        let hub = Hub::new(16);
        let store = StoreId::new();
        let mut slow = hub
            .join_agent(store, UserId::new(), "session:x".into())
            .listener;
        let mut quick = hub
            .join_agent(store, UserId::new(), "session:y".into())
            .listener;
        let frame = |n: usize| Frame::new(Audience::Agents, "message:new", store, None, &n);
        for n in 0..QUEUE + 50 {
            hub.publish(&[frame(n)]);
            // One reader keeps up; the other never reads.
            assert!(quick.rx.try_recv().is_ok());
        }
        assert!(!quick.lagged.load(Ordering::Acquire));
        assert!(slow.lagged.load(Ordering::Acquire), "the slow reader lags");
        let mut queued = 0;
        while slow.rx.try_recv().is_ok() {
            queued += 1;
        }
        assert_eq!(queued, QUEUE, "its queue never grew past the bound");
        // Other stores' sockets hear nothing.
        let mut other = hub
            .join_agent(StoreId::new(), UserId::new(), "session:z".into())
            .listener;
        hub.publish(&[frame(0)]);
        assert!(other.rx.try_recv().is_err());
    }

    /// Presence changes with a user's first socket and their last, not with every tab: a
    /// store with thousands of sockets would otherwise send every one of them a frame for
    /// each socket that opens or closes.
    #[test]
    fn the_online_team_changes_with_a_users_first_and_last_socket() {
        let hub = Hub::new(16);
        let store = StoreId::new();
        let (ana, bo) = (UserId::new(), UserId::new());
        let first = hub.join_agent(store, ana, "session:a1".into());
        assert!(first.changed);
        assert_eq!(first.online, [ana]);
        let second = hub.join_agent(store, ana, "session:a2".into());
        assert!(!second.changed, "a second tab changes nothing");
        assert_eq!(second.online, [ana]);
        let other = hub.join_agent(store, bo, "session:b".into());
        assert!(other.changed);
        assert_eq!(other.online.len(), 2);

        assert_eq!(hub.leave_agent(store, first.listener.id), None);
        assert_eq!(hub.leave_agent(store, second.listener.id), Some(vec![bo]));
        assert_eq!(hub.leave_agent(store, second.listener.id), None, "once");
        assert_eq!(hub.leave_agent(store, other.listener.id), Some(vec![]));
        assert_eq!(hub.open_sockets(), (0, 0));
    }

    #[test]
    fn slots_run_out_at_the_cap_and_come_back_when_released() {
        let hub = Hub::new(2);
        let (a, _b) = (hub.reserve().unwrap(), hub.reserve().unwrap());
        assert!(hub.reserve().is_none());
        drop(a);
        assert!(hub.reserve().is_some());
    }
}
