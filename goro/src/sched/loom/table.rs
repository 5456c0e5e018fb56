//! loom models of the task table (`task_table.rs`): the dump and shutdown
//! reading it while tasks spawn and exit on other Ps.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p goro --lib --release loom_table`
//!
//! A record's memory is the task's (`raw/` frees it after the task
//! leaves the table). The models stand for that free with a write to a
//! loom cell beside each record, after `remove`, and the dump reads the
//! cell of every record it is handed: loom reports a read that the
//! table's lock does not order before the free. Each model's planted bug
//! and what catches it: `bench/results/2026-11-27-loom-table-plants.txt`.

use crate::loom::cell::UnsafeCell;
use crate::loom::thread;
use crate::sched::task::meta::{Parent, TaskMeta};
use crate::sched::task::table::TaskTable;
use std::panic::Location;
use std::sync::Arc;

/// A record and its stand-in memory: `freed` is written once the task is
/// gone, as freeing the task's allocation would.
struct Record {
    meta: TaskMeta,
    freed: UnsafeCell<bool>,
}

// SAFETY: `freed` is only touched through loom's checked pointers, whose
// races the models are there to find.
unsafe impl Sync for Record {}
// SAFETY: as for Sync; every field is plain data.
unsafe impl Send for Record {}

fn record() -> Arc<Record> {
    Arc::new(Record {
        meta: TaskMeta::new(Location::caller(), None, None, Parent::SPAWNER, 1),
        freed: UnsafeCell::new(false),
    })
}

/// The dump's view: each record it is handed, read as a dump reads one
/// (its fields, here its memory's cell); the ids it saw.
fn dump(table: &TaskTable, records: &[Arc<Record>]) -> Vec<u64> {
    let mut seen = Vec::new();
    table.for_each(|m| {
        let r = records
            .iter()
            .find(|r| std::ptr::eq(&r.meta, m))
            .expect("the table handed out a record no task made");
        // SAFETY: a read of the stand-in memory, checked by loom.
        assert!(
            !unsafe { *r.freed.get().deref() },
            "the dump read a freed record"
        );
        seen.push(m.id.0);
    });
    seen
}

/// A task exits on one P (leaves the table, its memory freed) while
/// another task spawns and exits on a second P and the dump walks the
/// table; a third task, live throughout, is always seen, and no record is
/// read after its free. The second P is P 2, whose shard is P 0's under
/// loom's three shards, so the spawn reuses the exit's free slot in some
/// interleavings and appends in others.
#[test]
fn loom_table_dump_never_reads_a_freed_record_and_sees_every_live_task() {
    loom::model(|| {
        let table = Arc::new(TaskTable::new());
        let (exiting, spawned, live) = (record(), record(), record());
        // SAFETY (all inserts): every record outlives its entry: removed
        // before its stand-in free, or kept until the table is dropped.
        unsafe {
            table.insert(&exiting.meta, Some(0));
            table.insert(&live.meta, Some(0));
        }
        let records = [exiting.clone(), spawned.clone(), live.clone()];

        let (t, e) = (table.clone(), exiting.clone());
        let exit = thread::spawn(move || {
            t.remove(&e.meta);
            // SAFETY: the stand-in free, checked by loom.
            unsafe { *e.freed.get_mut().deref() = true };
        });
        let (t, s) = (table.clone(), spawned.clone());
        let spawn = thread::spawn(move || {
            // SAFETY: removed below, before its stand-in free.
            unsafe { t.insert(&s.meta, Some(2)) };
            t.remove(&s.meta);
            // SAFETY: the stand-in free, checked by loom.
            unsafe { *s.freed.get_mut().deref() = true };
        });
        let seen = dump(&table, &records);
        assert!(
            seen.contains(&live.meta.id.0),
            "the dump missed a task live throughout it"
        );
        exit.join().unwrap();
        spawn.join().unwrap();
        table.remove(&live.meta);
    });
}

/// A parked task (the table holds its reference) exits on one thread,
/// without the lock, while shutdown takes every held reference back on
/// another: exactly one of them gets the reference, and shutdown never
/// reads the record after its free.
#[test]
fn loom_table_a_held_reference_goes_to_shutdown_or_to_the_exit_once() {
    loom::model(|| {
        let table = Arc::new(TaskTable::new());
        let task = record();
        // SAFETY: removed below, before its stand-in free.
        unsafe { table.insert(&task.meta, Some(0)) };
        assert!(table.hold(&task.meta));

        let (t, r) = (table.clone(), task.clone());
        let exit = thread::spawn(move || {
            let got = t.remove(&r.meta);
            // SAFETY: the stand-in free, checked by loom.
            unsafe { *r.freed.get_mut().deref() = true };
            got
        });
        let mut taken = 0;
        table.take_held(|m| {
            assert!(std::ptr::eq(m, &task.meta), "a record no task made");
            // SAFETY: a read of the stand-in memory, checked by loom.
            assert!(
                !unsafe { *task.freed.get().deref() },
                "shutdown read a freed record"
            );
            taken += 1;
        });
        let by_exit = exit.join().unwrap();
        assert_eq!(
            taken + usize::from(by_exit),
            1,
            "the held reference was lost or taken twice"
        );
    });
}

/// A shard's last task exits without the lock while an insert finds the
/// shard past its kept chunks: the insert gives the chunks back only
/// after the exit's last touch of its entry (loom reports an access to
/// an atomic of a freed chunk), and the table stays whole afterwards.
#[test]
fn loom_table_give_back_waits_for_an_exit_without_the_lock() {
    loom::model(|| {
        let table = Arc::new(TaskTable::new());
        let (a, b, c, d) = (record(), record(), record(), record());
        // SAFETY (all inserts): every record outlives its entry.
        unsafe {
            table.insert(&a.meta, Some(0));
            table.insert(&b.meta, Some(0));
            table.insert(&c.meta, Some(0)); // a second chunk under loom
        }
        table.remove(&a.meta);
        assert!(table.hold(&b.meta));
        assert!(table.remove(&b.meta));
        let (t, r) = (table.clone(), c.clone());
        let exit = thread::spawn(move || t.remove(&r.meta));
        // SAFETY: removed below.
        unsafe { table.insert(&d.meta, Some(0)) };
        exit.join().unwrap();
        assert_eq!(table.len(), 1, "the table lost count of its one task");
        let seen = dump(&table, &[a.clone(), b.clone(), c.clone(), d.clone()]);
        assert_eq!(seen, vec![d.meta.id.0], "the dump must see exactly d");
        table.remove(&d.meta);
        assert_eq!(table.len(), 0);
    });
}
