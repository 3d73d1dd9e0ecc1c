package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.StatementWatch;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bucket permits of a pick's jobs are leased ahead in one statement for all their keys, and no
 * key goes over its bucket for it.
 */
@ExtendWith(LayoverPostgresExtension.class)
class LeaseAheadTest {

    private static final Logger LOG = LoggerFactory.getLogger(LeaseAheadTest.class);
    private static final int KEYS = 40;
    private static final int LIMIT = 5; // requests per second and key
    private static final Duration BURST = Duration.ofMillis(200); // capacity 1: no burst

    private final List<Layover> instances = new ArrayList<>();
    private final AtomicLong leaseAheads = new AtomicLong();
    private final AtomicLong takes = new AtomicLong();
    private final AtomicLong placeTakes = new AtomicLong();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    /** Jobs with a key each, picked together, their permits free: one statement leases them all. */
    @Test
    void aPicksJobsAreLeasedTheirPermitsTogetherWithinEachKeysBucket(TestDatabase db) {
        ConcurrentHashMap<String, List<Instant>> starts = new ConcurrentHashMap<>();
        ConcurrentHashMap<String, Boolean> snoozed = new ConcurrentHashMap<>();
        // each job's first run snoozes (rescheduled, no permit kept): the jobs come back due, holding nothing, and
        // their keys met (as jobs do after a cooldown or a retry)
        JobType<Chat> chat = chat(starts, (args, ctx) -> snoozed.putIfAbsent(ctx.jobId(), true) == null
                ? Outcome.snooze(Duration.ofMillis(700)) : Outcome.done());
        Layover worker = worker(db, chat);
        int perKey = 3;
        List<Chat> args = new ArrayList<>();
        for (int i = 0; i < perKey; i++) {
            for (int k = 0; k < KEYS; k++) {
                args.add(new Chat("org:" + k + " " + i));
            }
        }
        worker.enqueueBatch(chat, args); // no bucket row yet: nothing booked at enqueue
        Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));

        int runs = 2 * perKey * KEYS;
        LOG.info("MEASURED {} runs over {} keys: {} lease-ahead statements, {} takes", runs, KEYS, leaseAheads.get(), takes.get());
        assertPaced(starts, 2 * perKey);
        assertTrue(leaseAheads.get() > 0, "picks leased their jobs' permits ahead");
        // the first runs take their permits one by one, a key's first take twice (its bucket row is written between);
        // most runs after the snooze spend a permit leased by their pick. Without leases ahead: every run takes,
        // more takes than runs (measured 280 of 240; with them 180)
        assertTrue(takes.get() < runs, "fewer takes than runs: " + takes.get() + " of " + runs);
    }

    /** Jobs booked at enqueue: their admissions carry the permits their picks read, without a statement. */
    @Test
    void aJobBookedAtEnqueueIsAdmittedWithoutAStatement(TestDatabase db) {
        ConcurrentHashMap<String, List<Instant>> starts = new ConcurrentHashMap<>();
        JobType<Chat> chat = chat(starts, (args, ctx) -> Outcome.done());
        Layover worker = worker(db, chat);
        List<Chat> first = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) {
            first.add(new Chat("org:" + k + " first"));
        }
        worker.enqueueBatch(chat, first); // the keys' bucket rows are written by these jobs' admissions
        Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        takes.set(0);

        int perKey = 3;
        List<Chat> args = new ArrayList<>();
        for (int i = 0; i < perKey; i++) {
            for (int k = 0; k < KEYS; k++) {
                args.add(new Chat("org:" + k + " " + i));
            }
        }
        worker.enqueueBatch(chat, args); // each job inserted at the permit it booked, the first of each key due now
        Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));

        int jobs = perKey * KEYS;
        LOG.info("MEASURED {} jobs booked at enqueue over {} keys: {} takes", jobs, KEYS, takes.get());
        assertPaced(starts, perKey + 1);
        // a take is left for a job picked later than the grace after its permit (a stalled machine) only
        assertTrue(takes.get() <= jobs / 10, "admitted from the permits their picks read: " + takes.get() + " takes of " + jobs);
    }

    /**
     * Jobs at their places in a key's waiting line (enqueued beyond the booking horizon): each
     * pick takes its line jobs' permits in one statement, and their admissions carry them.
     */
    @Test
    void aPicksJobsAtTheirPlacesInALineTakeTheirPermitsTogether(TestDatabase db) {
        ConcurrentHashMap<String, List<Instant>> starts = new ConcurrentHashMap<>();
        JobType<Chat> chat = chat(starts, (args, ctx) -> Outcome.done(), Duration.ofSeconds(2));
        Layover worker = worker(db, chat);
        worker.enqueue(chat, new Chat("org:0 first")); // the key met: its bucket row is written by this job's admission
        Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        takes.set(0);

        int jobs = 40;
        List<Chat> args = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            args.add(new Chat("org:0 " + i));
        }
        worker.enqueueBatch(chat, args); // about 2 s of permits booked (maxDeferral), the rest at places in the line
        long inLine = db.count("select count(*) from layover.scheduled_tasks where permit_at is null"
                + " and last_reschedule_reason = 'bucket'");
        assertTrue(inLine >= 20, "most of the batch waits at places in the line: " + inLine);
        Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));

        LOG.info("MEASURED {} jobs, {} at places: {} place statements, {} takes", jobs, inLine, placeTakes.get(), takes.get());
        assertEquals(0L, db.count("select count(*) from layover.job_history where reschedules > 0"),
                "each job ran on its permit or at its place, none told to wait");
        assertTrue(placeTakes.get() > 0, "picks took their line jobs' permits together");
        // without it every job at a place took its own permit: a take per line job (measured: 30 takes for 30 jobs at places; with it, 0)
        assertTrue(takes.get() < inLine / 3, "the line's jobs carried the permits their picks took: " + takes.get()
                + " takes for " + inLine + " jobs at places");
        // a place may be spent up to the grace (2 s) late, as before
        List<Instant> s = starts.get("org:0").stream().sorted().toList();
        for (int i = 0; i < s.size(); i++) {
            for (int j = i + 2; j < s.size(); j++) {
                double least = (j - i - 1) / (double) LIMIT - 2.0;
                double span = Duration.between(s.get(i), s.get(j)).toNanos() / 1e9;
                assertTrue(span >= least, "calls " + i + " and " + j + " " + span + " s apart, at least " + least);
            }
        }
    }

    private JobType<Chat> chat(ConcurrentHashMap<String, List<Instant>> starts, dev.layover.core.JobHandler<Chat> then) {
        return chat(starts, then, dev.layover.core.JobPolicy.defaults().maxDeferral());
    }

    private JobType<Chat> chat(ConcurrentHashMap<String, List<Instant>> starts, dev.layover.core.JobHandler<Chat> then,
            Duration maxDeferral) {
        return JobType.builder("chat", Chat.class)
                .policy(dev.layover.core.JobPolicy.defaults().withMaxDeferral(maxDeferral))
                .providerKey(a -> a.text().substring(0, a.text().indexOf(' ')))
                .handler((args, ctx) -> {
                    starts.computeIfAbsent(args.text().substring(0, args.text().indexOf(' ')),
                            k -> Collections.synchronizedList(new ArrayList<>())).add(Instant.now());
                    return then.handle(args, ctx);
                })
                .build();
    }

    private Layover worker(TestDatabase db, JobType<Chat> chat) {
        Layover worker = Workers.builder(counting(db.newDataSource(16)), "worker-a").register(chat).threads(8)
                .bucket("org:*", BucketSettings.requestsPerSecond(LIMIT).withBurst(BURST)).start();
        instances.add(worker);
        return worker;
    }

    /** Every key's calls spread as its bucket allows: one per 1/LIMIT s after the first (a capacity of one permit). */
    private static void assertPaced(ConcurrentHashMap<String, List<Instant>> starts, int calls) {
        for (int k = 0; k < KEYS; k++) {
            List<Instant> s = starts.get("org:" + k).stream().sorted().toList();
            assertEquals(calls, s.size(), "org:" + k);
            for (int i = 0; i < s.size(); i++) {
                for (int j = i + 2; j < s.size(); j++) {
                    // calls i and j hold permits (j - i) / LIMIT s apart; a permit is spent up to a burst late
                    double least = (j - i - 1) / (double) LIMIT;
                    double span = Duration.between(s.get(i), s.get(j)).toNanos() / 1e9;
                    assertTrue(span >= least, "org:" + k + ": calls " + i + " and " + j + " " + span + " s apart, at least " + least);
                }
            }
        }
    }

    private DataSource counting(DataSource target) {
        return StatementWatch.of(target, sql -> {
            if (sql.contains("a(key, rr, rc, n)") && sql.contains("grace_s")) {
                placeTakes.incrementAndGet();
            } else if (sql.contains("a(key, rr, rc, n)")) {
                leaseAheads.incrementAndGet();
            } else if (sql.contains("AS rx0")) {
                takes.incrementAndGet();
            }
        });
    }
}
