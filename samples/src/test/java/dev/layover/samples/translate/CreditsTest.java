package dev.layover.samples.translate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The one-statement charge: at most once per job, never below zero, under races. */
@DatabaseTest
class CreditsTest {

    private static Credits.Charge charge(TestDatabase db, String job, String account, long cost) throws Exception {
        try (Connection c = db.dataSource().getConnection()) {
            return Credits.charge(c, job, account, cost);
        }
    }

    @Test
    void aJobIsChargedOnceAndAnEmptyAccountIsRefused(TestDatabase db) throws Exception {
        Credits.createSchema(db.dataSource(), Map.of("a", 10L));
        assertEquals(new Credits.Charge(Credits.Result.CHARGED, 6), charge(db, "job-1", "a", 4));
        assertEquals(new Credits.Charge(Credits.Result.ALREADY_CHARGED, 6), charge(db, "job-1", "a", 4),
                "a retry or replay of the same job charges nothing");
        assertEquals(new Credits.Charge(Credits.Result.INSUFFICIENT, 6), charge(db, "job-2", "a", 7));
        assertEquals(new Credits.Charge(Credits.Result.CHARGED, 0), charge(db, "job-3", "a", 6));
        assertEquals(new Credits.Charge(Credits.Result.ALREADY_CHARGED, 0), charge(db, "job-3", "a", 6),
                "already charged, even though the balance could not pay it again");
        assertEquals(new Credits.Charge(Credits.Result.NO_ACCOUNT, -1), charge(db, "job-4", "nobody", 1));
        assertEquals(2, db.count("select count(*) from layover_demo.charges"));
        assertEquals(0L, ((Number) db.value("select balance from layover_demo.accounts where id = 'a'")).longValue());
    }

    @Test
    void aChargeRolledBackWithItsTransactionLeavesNothing(TestDatabase db) throws Exception {
        Credits.createSchema(db.dataSource(), Map.of("a", 10L));
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertEquals(Credits.Result.CHARGED, Credits.charge(c, "job-1", "a", 4).result());
            c.rollback();
        }
        assertEquals(0, db.count("select count(*) from layover_demo.charges"));
        assertEquals(Credits.Result.CHARGED, charge(db, "job-1", "a", 4).result());
    }

    /**
     * Two workers race on one account: every job is charged by both at the same moment (as when
     * a job runs twice), and together they ask for twice the balance. Exactly one charge per job,
     * no overdraft, and the balance moved by exactly the sum of the charges.
     */
    @Test
    void twoWorkersRacingOnOneAccountNeverChargeTwiceNorOverdraw(TestDatabase db) throws Exception {
        int jobs = 200;
        long opening = 250; // each job costs 1-3 credits: about 400 asked for
        Credits.createSchema(db.dataSource(), Map.of("shared", opening));
        AtomicInteger charged = new AtomicInteger();
        AtomicInteger already = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        int workers = 2;
        CyclicBarrier together = new CyclicBarrier(workers);
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                done.add(pool.submit(() -> {
                    for (int j = 0; j < jobs; j++) {
                        together.await(10, TimeUnit.SECONDS); // both workers charge job j at the same moment
                        try (Connection c = db.dataSource().getConnection()) {
                            c.setAutoCommit(false);
                            Credits.Charge r = Credits.charge(c, "job-" + j, "shared", 1 + j % 3);
                            c.commit();
                            switch (r.result()) {
                                case CHARGED -> charged.incrementAndGet();
                                case ALREADY_CHARGED -> already.incrementAndGet();
                                default -> refused.incrementAndGet();
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }

        long charges = db.count("select count(*) from layover_demo.charges");
        long sum = ((Number) db.value("select coalesce(sum(amount), 0) from layover_demo.charges")).longValue();
        long balance = ((Number) db.value("select balance from layover_demo.accounts where id = 'shared'")).longValue();
        assertEquals(charged.get(), charges, "one charge row per CHARGED result");
        assertEquals(charged.get(), already.get(), "the other worker of every charged job found the charge made");
        assertEquals(2 * jobs, 2 * charged.get() + refused.get(), "a job refused was refused by both workers");
        assertEquals(opening - sum, balance, "the balance moved by exactly the charges");
        assertTrue(balance >= 0 && balance < 3, "the credits ran out without an overdraft: " + balance);
        assertTrue(refused.get() > 0, "the account ran dry during the race");
        assertEquals(0, db.count("select count(*) from (select job_id from layover_demo.charges group by job_id"
                + " having count(*) > 1) t"));
    }

}
