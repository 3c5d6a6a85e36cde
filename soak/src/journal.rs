//! What the soak's loops record for the verdicts: each kill of the controller and what it left at the agent,
//! each halt and what it released, and notes.

use std::time::Duration;

use parking_lot::Mutex;

/// One kill of the controller and what it left at the agent.
#[derive(Debug, Default, Clone)]
pub struct KillRecord {
    pub at: Duration,
    /// Faults of the dead controller seen at the agent after the kill.
    pub left: Vec<String>,
    /// Those seen later than their lease (plus the grace) after the kill.
    pub late: Vec<String>,
    /// When the agent held none of them any more.
    pub gone_after: Option<Duration>,
    pub problem: Option<String>,
}

/// One halt with held requests.
#[derive(Debug, Default, Clone)]
pub struct HaltRecord {
    pub at: Duration,
    pub held_before: u64,
    /// What the agent held [`crate::chaos::RELEASE_LIMIT`] after the halt's answer.
    pub held_after: Option<u64>,
    /// Charges still waiting when the halt was sent (the others were answered by another fault, never held).
    pub pending: usize,
    /// Of those, the ones let go within that limit (answered, or their connection closed).
    pub answered: usize,
    pub problem: Option<String>,
}

/// What the soak's loops recorded for the verdicts.
#[derive(Debug, Default)]
pub struct Journal {
    pub(crate) kills: Mutex<Vec<KillRecord>>,
    pub(crate) halts: Mutex<Vec<HaltRecord>>,
    notes: Mutex<Vec<String>>,
}

impl Journal {
    pub fn killed(&self, record: KillRecord) {
        eprintln!("kill at {:.0} s: {record:?}", record.at.as_secs_f64());
        self.kills.lock().push(record);
    }
    pub fn halted(&self, record: HaltRecord) {
        eprintln!("halt at {:.0} s: {record:?}", record.at.as_secs_f64());
        self.halts.lock().push(record);
    }
    pub fn note(&self, note: String) {
        eprintln!("note: {note}");
        self.notes.lock().push(note);
    }
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().clone()
    }
}
