package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A job enqueued behind a bucket books its permit as it is inserted: it is written once
 * (its insert), picked, and deleted; no worker reschedules it to a permit. Jobs beyond the booking
 * horizon take places in the key's waiting line as they are inserted. Only what may book does.
 */
@ExtendWith(LayoverPostgresExtension.class)
class PermitsAtEnqueueTest {

    private static final String KEY = "fake:booked";
    private static final int RATE = 10; // requests per second; burst 1 s: capacity 10, half of it kept free

    private final List<Layover> instances = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private static JobType<Chat> chat(String name, Duration maxDeferral) {
        return JobType.builder(name, Chat.class)
                .providerKey(KEY)
                .policy(JobPolicy.defaults().withMaxDeferral(maxDeferral))
                .handler((args, ctx) -> Outcome.done())
                .build();
    }

    /** A worker that writes the key's bucket row at start and runs none of these job types; and a client. */
    private Layover client(TestDatabase db, JobType<?>... types) {
        JobType<Chat> other = JobType.builder("other", Chat.class).handler((a, c) -> Outcome.done()).build();
        instances.add(Workers.builder(db.newDataSource(4), "bucket-writer").register(other)
                .bucket(KEY, BucketSettings.requestsPerSecond(RATE)).start());
        Layover.Builder b = Layover.builder(db.newDataSource(4)).migrate(false);
        for (JobType<?> t : types) {
            b.register(t);
        }
        Layover c = b.build();
        instances.add(c);
        return c;
    }

    private static List<Chat> args(int n) {
        List<Chat> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new Chat("job " + i));
        }
        return out;
    }

    @Test
    void aBatchIsInsertedAtItsPermitsInOrderAndTheBucketMovesPastThem(TestDatabase db) {
        JobType<Chat> chat = chat("chat", Duration.ofHours(1));
        Layover c = client(db, chat);
        c.enqueueBatch(chat, args(100));

        assertEquals(100L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'chat'"
                + " and permit_at = execution_time and reschedules = 0 and last_reschedule_reason = 'bucket'"
                + " and last_reschedule_detail like '%a permit booked at enqueue'"), "every job holds its permit");
        // half the burst runs at once (5 of capacity 10), the rest one request's time apart, in enqueue order
        assertEquals(5L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'chat'"
                + " and execution_time = (select min(execution_time) from layover.scheduled_tasks where task_name = 'chat')"));
        double span = ((Number) db.value("select extract(epoch from max(execution_time) - min(execution_time))"
                + " from layover.scheduled_tasks where task_name = 'chat'")).doubleValue();
        assertEquals((100 - 5) / (double) RATE, span, 1e-3, "paced at the bucket's rate");
        assertEquals(0L, db.count("select count(*) from (select run_at, lag(run_at) over (order by"
                + " split_part(args->>'text', ' ', 2)::int) as prev from layover.jobs where job_type = 'chat') x"
                + " where run_at < prev"), "in enqueue order");
        double tat = ((Number) db.value("select extract(epoch from request_tat - now()) from layover.buckets"
                + " where provider_key = ?", KEY)).doubleValue();
        assertEquals(100 / (double) RATE, tat, 0.5, "the bucket's tat moved past the 100 booked permits");

        // a later job of the same key books after them: the bucket hands no permit out twice
        c.enqueue(chat, new Chat("late"));
        assertEquals(1L, db.count("select count(*) from layover.scheduled_tasks t where t.task_name = 'chat'"
                + " and t.permit_at > (select max(permit_at) from layover.scheduled_tasks u where u.task_name = 'chat'"
                + " and u.task_instance <> t.task_instance)"));
    }

    @Test
    void jobsBeyondTheHorizonTakePlacesInTheLineAndJobsThatMayNotBookAreInsertedDue(TestDatabase db) throws Exception {
        JobType<Chat> shortWait = chat("short-wait", Duration.ofSeconds(3)); // horizon 3 s: 5 + 30 permits
        JobType<Chat> chat = chat("chat", Duration.ofHours(1));
        Layover c = client(db, shortWait, chat);
        c.enqueueBatch(shortWait, args(100));
        long booked = db.count("select count(*) from layover.scheduled_tasks where task_name = 'short-wait'"
                + " and permit_at is not null");
        assertTrue(booked >= 30 && booked <= 36, "the permits within maxDeferral booked, was " + booked);
        String inLine = "select count(*) from layover.scheduled_tasks where task_name = 'short-wait' and permit_at is null"
                + " and reschedules = 0 and last_reschedule_reason = 'bucket'"
                + " and last_reschedule_detail like '%a place in its waiting line (no permit held)'";
        assertEquals(100 - booked, db.count(inLine), "the rest take places in the key's line as they are inserted");
        assertEquals(0L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'short-wait'"
                + " and permit_at is null and execution_time < (select max(permit_at) from layover.scheduled_tasks)"),
                "the line starts behind the booked permits");
        double lineSpan = ((Number) db.value("select extract(epoch from max(execution_time) - min(execution_time))"
                + " from layover.scheduled_tasks where task_name = 'short-wait' and permit_at is null")).doubleValue();
        assertEquals((100 - booked - 1) / (double) RATE, lineSpan, 1e-3, "one request's time apart");
        assertEquals(0L, db.count("select count(*) from (select run_at, lag(run_at) over (order by"
                + " split_part(args->>'text', ' ', 2)::int) as prev from layover.jobs where job_type = 'short-wait') x"
                + " where run_at < prev"),
                "in enqueue order");

        // a second batch joins the line at its end, although the horizon may still have a permit
        Object end = db.value("select max(execution_time) from layover.scheduled_tasks where task_name = 'short-wait'");
        List<Chat> late = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            late.add(new Chat("late " + i));
        }
        c.enqueueBatch(shortWait, late);
        String lateJobs = "select count(*) from layover.scheduled_tasks where task_name = 'short-wait'"
                + " and convert_from(task_data, 'UTF8') like '%late%'";
        long lateInLine = db.count(lateJobs + " and permit_at is null and execution_time > ?::timestamptz"
                + " and last_reschedule_detail like '%a place in its waiting line (no permit held)'", end);
        assertEquals(10L, lateInLine, "behind the line's last place, none ahead of it holding a permit");
        double gap = ((Number) db.value("select extract(epoch from min(execution_time) - ?::timestamptz)"
                + " from layover.scheduled_tasks where task_name = 'short-wait' and execution_time > ?::timestamptz",
                end, end)).doubleValue();
        assertEquals(1.0 / RATE, gap, 1e-3, "right behind the last place");

        // a raised priority, a deadline, the caller's transaction: due at their run time, no permit
        c.enqueue(chat, new Chat("urgent"), EnqueueOptions.now().withPriority(5));
        c.enqueue(chat, new Chat("deadline"), EnqueueOptions.now().withDeadline(Duration.ofMinutes(5)));
        try (Connection con = db.dataSource().getConnection()) {
            con.setAutoCommit(false);
            c.enqueue(con, chat, new Chat("in a transaction"), EnqueueOptions.now());
            c.enqueueBatch(con, chat, args(3), a -> EnqueueOptions.now());
            con.commit();
        }
        assertEquals(6L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'chat'"
                + " and permit_at is null and execution_time <= now()"));
        // a job due later keeps its run time
        c.enqueue(chat, new Chat("later"), EnqueueOptions.after(Duration.ofMinutes(10)));
        assertEquals(1L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'chat'"
                + " and permit_at is null and execution_time > now() + interval '9 minutes'"));
    }

    @Test
    void aLineShiftedByPermitsTakenAroundItDoesNotCascade(TestDatabase db) throws Exception {
        JobType<Chat> shortWait = chat("short-wait", Duration.ofSeconds(3));
        Layover c = client(db, shortWait);
        c.enqueueBatch(shortWait, args(100)); // about 35 permits, 65 places in the line from 3.5 s on
        // permits taken around the line (a stalled worker, jobs with deadlines): 2 s of them, past the burst
        db.update("update layover.buckets set request_tat = request_tat + interval '2 seconds' where provider_key = ?", KEY);
        db.execute("create table public.picks (id text not null)");
        db.execute("create function public.log_pick() returns trigger language plpgsql as $$ begin"
                + " insert into public.picks values (new.task_instance); return new; end $$");
        db.execute("create trigger log_pick after update of picked on layover.scheduled_tasks for each row"
                + " when (new.picked and not old.picked) execute function public.log_pick()");
        long lineJobs = db.count("select count(*) from layover.scheduled_tasks where permit_at is null");

        instances.add(Workers.builder(db.newDataSource(8), "runner").register(shortWait).threads(4)
                .bucket(KEY, BucketSettings.requestsPerSecond(RATE)).start());
        dev.layover.testing.Await.equal(Duration.ofSeconds(60), "jobs done", 100L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'short-wait'"));

        long pickedTwice = db.count("select count(*) from (select id from public.picks group by id having count(*) > 1) x");
        // a job refused at its place books the next horizon of the line while the line's end is beyond its
        // maxDeferral (3 s), and takes a place at the end once it is not: either way the shift costs about as
        // many refusals as the 2 s of permits taken around the line (20 jobs). Before places were taken at enqueue, every line job
        // behind the shift found its permit gone, was picked to be told to wait, and took the next job's permit
        assertTrue(pickedTwice <= 2 * RATE, "jobs picked to be told to wait: " + pickedTwice + " of " + lineJobs + " in the line");
        assertEquals(0L, db.count("select count(*) from layover.job_history where job_type = 'short-wait'"
                + " and (reschedules > 1 or outcome <> 'completed')"), "each job moved once at most, none parked");
    }

    @Test
    void aLineShiftedBeyondItsJobsReachMovesThePlacesWhosePermitsAreGoneToItsEnd(TestDatabase db) throws Exception {
        JobType<Chat> shortWait = chat("short-wait", Duration.ofSeconds(3)); // horizon 3 s: about 35 permits
        Layover c = client(db, shortWait);
        c.enqueueBatch(shortWait, args(200)); // the rest in a line 16.5 s long, beyond a told-to-wait job's reach
        // 3 s pass with no worker running: the booked permits lapse
        db.update("update layover.scheduled_tasks set execution_time = execution_time - interval '3 seconds',"
                + " permit_at = permit_at - interval '3 seconds' where task_name = 'short-wait'");
        db.update("update layover.buckets set request_tat = request_tat - interval '3 seconds' where provider_key = ?", KEY);
        db.execute("create table public.turns as select task_instance as id,"
                + " row_number() over (order by execution_time, task_instance) - 1 as turn from layover.scheduled_tasks");

        instances.add(Workers.builder(db.newDataSource(8), "runner").register(shortWait).threads(4)
                .bucket(KEY, BucketSettings.requestsPerSecond(RATE)).start());
        dev.layover.testing.Await.equal(Duration.ofSeconds(60), "jobs done", 200L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'short-wait'"));

        // the lapsed jobs book the permits of the line's first places, past the bucket's burst. Those places
        // move to the line's end, and the line behind keeps its places. Before, every line job behind the
        // shift was booked again, a write each, until the line's end came within 3 s (70 of 70 here)
        String rescheduled = "select count(*) from layover.job_history h join public.turns t on t.id = h.job_id"
                + " where h.job_type = 'short-wait' and h.reschedules > 0";
        long behind = db.count(rescheduled + " and t.turn between 100 and 169");
        assertTrue(behind <= 5, "jobs behind the shift rescheduled: " + behind + " of 70");
        // the lapsed jobs told to wait, and as many places moved to the end (27 measured)
        long all = db.count(rescheduled);
        assertTrue(all <= 60, "jobs rescheduled: " + all + " of 200");
        assertEquals(0L, db.count("select count(*) from layover.job_history where job_type = 'short-wait'"
                + " and (reschedules > 1 or outcome <> 'completed')"), "each job moved once at most, none parked");
    }

    @Test
    void aJobToldToWaitTakesAPlaceAtTheLinesEndNotAPermitAheadOfIt(TestDatabase db) throws Exception {
        JobType<Chat> chat = chat("chat", Duration.ofHours(1));
        client(db, chat).enqueueBatch(chat, args(700)); // 60 s of permits, the rest in the line behind them
        String line = "select count(*) from layover.scheduled_tasks where task_name = 'chat' and permit_at is null"
                + " and last_reschedule_reason = 'bucket' and reschedules = 0";
        long inLine = db.count(line);
        assertTrue(inLine >= 80, "a line behind the horizon, was " + inLine);
        Object lineEnd = db.value("select max(execution_time) from layover.scheduled_tasks where permit_at is null");
        Object tat = db.value("select request_tat from layover.buckets where provider_key = ?", KEY);

        String id = toldToWait(db, chat, "null"); // a retry, a job whose permit lapsed while no worker ran
        assertEquals(1L, db.count("select count(*) from layover.scheduled_tasks where task_instance = ? and permit_at is null"
                + " and last_reschedule_reason = 'bucket' and last_reschedule_detail like '%a place in its waiting line (no permit held)'"
                + " and execution_time = ?::timestamptz + interval '100 milliseconds'", id, lineEnd),
                "one request's time behind the line's end, holding no permit");
        assertEquals(tat, db.value("select request_tat from layover.buckets where provider_key = ?", KEY),
                "no permit taken from the bucket for it");
        assertEquals(inLine, db.count(line), "every job in the line kept its place");
    }

    @Test
    void aJobWithADeadlineToldToWaitBooksAPermitAheadOfTheLine(TestDatabase db) throws Exception {
        JobType<Chat> chat = chat("chat", Duration.ofHours(1));
        client(db, chat).enqueueBatch(chat, args(700));
        Object lineStart = db.value("select min(execution_time) from layover.scheduled_tasks where permit_at is null");

        String id = toldToWait(db, chat, "now() + interval '10 minutes'");
        // the end of an hour-long line would pass its deadline: it takes the next permit, as it did before lines
        assertEquals(1L, db.count("select count(*) from layover.scheduled_tasks where task_instance = ?"
                + " and permit_at is not null and execution_time = permit_at and permit_at < ?::timestamptz + interval '1 second'",
                id, lineStart), "a permit booked about where the line starts");
    }

    @Test
    void aLineJobPickedLateTakesThePermitOfItsPlace(TestDatabase db) throws Exception {
        JobType<Chat> shortWait = chat("short-wait", Duration.ofSeconds(3));
        client(db, shortWait).enqueueBatch(shortWait, args(100)); // about 35 permits, 65 places from 3.5 s on
        // polls 1.5 s apart: the line's jobs are picked in batches of about 15, up to 1.5 s after their places, more
        // than the bucket's burst (10) lets through as of now
        instances.add(Workers.builder(db.newDataSource(8), "runner").register(shortWait).threads(4)
                .pollInterval(Duration.ofMillis(1500)).bucket(KEY, BucketSettings.requestsPerSecond(RATE)).start());
        dev.layover.testing.Await.equal(Duration.ofSeconds(60), "jobs done", 100L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'short-wait'"));
        assertEquals(0L, db.count("select count(*) from layover.job_history where job_type = 'short-wait' and reschedules > 0"),
                "each job ran on its permit or its place, none told to wait");
    }

    /**
     * The last job booked at enqueue comes due holding nothing, with the given deadline (SQL); a
     * worker starts and picks it, and is told to wait.
     *
     * @return the job's id, once it is rescheduled
     */
    private String toldToWait(TestDatabase db, JobType<Chat> chat, String deadline) {
        String id = (String) db.value("select task_instance from layover.scheduled_tasks where permit_at is not null"
                + " order by execution_time desc limit 1");
        db.update("update layover.scheduled_tasks set execution_time = now(), permit_at = null, last_reschedule_reason = null,"
                + " deadline = " + deadline + " where task_instance = ?", id);
        instances.add(Workers.builder(db.newDataSource(8), "runner").register(chat).threads(4)
                .bucket(KEY, BucketSettings.requestsPerSecond(RATE)).start());
        dev.layover.testing.Await.equal(Duration.ofSeconds(30), "the job told to wait", 1L,
                () -> db.count("select count(*) from layover.scheduled_tasks where task_instance = ? and reschedules = 1", id));
        return id;
    }

    @Test
    void aLineTakesBatchAfterBatchOnOneConnection(TestDatabase db) {
        JobType<Chat> chat = chat("chat", Duration.ofHours(1));
        instances.add(Workers.builder(db.newDataSource(2), "bucket-writer")
                .register(JobType.builder("other", Chat.class).handler((a, c) -> Outcome.done()).build())
                .bucket(KEY, BucketSettings.requestsPerSecond(RATE)).start());
        Layover c = Layover.builder(db.newDataSource(1)).migrate(false).register(chat).build();
        instances.add(c);
        // a plan made once for any batch took the 10th batch on a connection minutes (a nested loop over
        // 5,000 rows each way, spilled to disk): each batch is planned with its arrays
        assertTimeoutPreemptively(Duration.ofSeconds(90), () -> {
            for (int i = 0; i < 14; i++) {
                c.enqueueBatch(chat, args(5_000));
            }
        });
        assertEquals(70_000L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'chat'"
                + " and last_reschedule_reason = 'bucket'"));
        double span = ((Number) db.value("select extract(epoch from max(execution_time) - min(execution_time))"
                + " from layover.scheduled_tasks where task_name = 'chat' and permit_at is null")).doubleValue();
        long line = db.count("select count(*) from layover.scheduled_tasks where task_name = 'chat' and permit_at is null");
        assertEquals((line - 1) / (double) RATE, span, 1e-3, "one line, one request's time apart, batch after batch");
    }

    @Test
    void aKeyWithoutABucketBooksNothing(TestDatabase db) {
        JobType<Chat> free = JobType.builder("free", Chat.class).providerKey("fake:no-bucket")
                .handler((a, ctx) -> Outcome.done()).build();
        Layover c = client(db, free);
        c.enqueueBatch(free, args(20));
        assertEquals(20L, db.count("select count(*) from layover.scheduled_tasks where task_name = 'free'"
                + " and permit_at is null and last_reschedule_reason is null and execution_time <= now()"));
    }

    @Test
    void jobsBookedAtEnqueueRunAtTheRateEachOnItsOwnPermit(TestDatabase db) throws Exception {
        JobType<Chat> chat = chat("chat", Duration.ofHours(1));
        Layover c = client(db, chat);
        c.enqueueBatch(chat, args(30));
        Object tat = db.value("select request_tat from layover.buckets where provider_key = ?", KEY);
        instances.add(Workers.builder(db.newDataSource(8), "runner").register(chat).threads(4)
                .bucket(KEY, BucketSettings.requestsPerSecond(RATE)).start());
        dev.layover.testing.Await.equal(Duration.ofSeconds(30), "jobs done", 30L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'chat'"));
        assertEquals(0L, db.count("select coalesce(max(reschedules), 0) from layover.job_history where job_type = 'chat'"),
                "none rescheduled: each spent the permit it was inserted with");
        assertEquals(tat, db.value("select request_tat from layover.buckets where provider_key = ?", KEY),
                "no permit taken from the bucket beyond those booked at enqueue");
    }
}
