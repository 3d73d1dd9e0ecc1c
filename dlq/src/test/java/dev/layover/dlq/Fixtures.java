package dev.layover.dlq;

import dev.layover.core.JobHandler;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;

/** Test job types, Layover instances tuned for tests, and dead letters written straight into the table. */
final class Fixtures {

    private Fixtures() {}

    /** The args of the test job type. */
    record Work(String name, int n) {}

    static final Duration WAIT = Duration.ofSeconds(30);

    /** A job type named {@code work} with retries that come back within milliseconds. */
    static JobType<Work> work(int maxAttempts, JobHandler<Work> handler) {
        return JobType.builder("work", Work.class)
                .policy(JobPolicy.defaults().withMaxAttempts(maxAttempts)
                        .withBackoff(Duration.ofMillis(1), Duration.ofMillis(5)))
                .providerKey(a -> "test:provider")
                .handler(handler)
                .build();
    }

    /** A job type named {@code work} whose handler does nothing. */
    static JobType<Work> work() {
        return work(3, (args, ctx) -> null);
    }

    /** Small thread pool, fast polling. */
    static Layover.Builder layover(TestDatabase db, JobType<?>... types) {
        return Layover.builder(db.dataSource())
                .register(types)
                .threads(4)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5));
    }

    /** Builds a dead letter row; {@link #insert} writes it. */
    static DL deadLetter(String jobId) {
        return new DL(jobId);
    }

    /** A dead letter to insert, with defaults for everything. */
    static final class DL {
        String jobType = "work";
        String jobId;
        String providerKey = "test:provider";
        String failureType = "provider_unavailable";
        String state = "parked";
        String errorClass = "java.io.IOException";
        String errorMessage = "connection reset";
        String args;
        Instant parkedAt = Instant.now();
        int autoReplays;

        DL(String jobId) {
            this.jobId = jobId;
            this.args = "{\"name\":\"" + jobId + "\",\"n\":1}";
        }

        DL type(String t) {
            jobType = t;
            return this;
        }

        DL provider(String p) {
            providerKey = p;
            return this;
        }

        DL failure(String f) {
            failureType = f;
            return this;
        }

        DL state(String s) {
            state = s;
            return this;
        }

        DL error(String cls, String msg) {
            errorClass = cls;
            errorMessage = msg;
            return this;
        }

        DL args(String json) {
            args = json;
            return this;
        }

        DL parkedAt(Instant t) {
            parkedAt = t;
            return this;
        }

        DL autoReplays(int n) {
            autoReplays = n;
            return this;
        }

        long insert(TestDatabase db) {
            return ((Number) db.value("""
                    INSERT INTO layover.dead_letters
                        (job_type, job_id, args, provider_key, failure_type, error_class, error_message, errors,
                         attempts, first_enqueued_at, parked_at, state, state_changed_at, auto_replay_count)
                    VALUES (?, ?, ?::jsonb, ?, ?, ?, ?,
                            jsonb_build_array(jsonb_build_object('attempt', 1, 'kind', 'transient',
                                'error_class', ?::text, 'message', ?::text)),
                            1, ?, ?, ?, ?, ?)
                    RETURNING id""",
                    jobType, jobId, args, providerKey, failureType, errorClass, errorMessage, errorClass,
                    errorMessage, Timestamp.from(parkedAt), Timestamp.from(parkedAt), state,
                    Timestamp.from(parkedAt), autoReplays)).longValue();
        }
    }

    /**
     * Inserts {@code n} parked dead letters of job type {@code work} in one statement, parked one
     * millisecond apart going back from now, with job ids {@code prefix-1..n}.
     */
    static void insertMany(TestDatabase db, int n, String prefix, String provider, String failure, String state) {
        db.update("""
                INSERT INTO layover.dead_letters
                    (job_type, job_id, args, provider_key, failure_type, error_class, error_message, attempts,
                     first_enqueued_at, parked_at, state, state_changed_at)
                SELECT 'work', ? || '-' || g, jsonb_build_object('name', ? || '-' || g, 'n', g), ?, ?,
                       'java.io.IOException', 'failed ' || g, 3, now(), now() - g * interval '1 millisecond', ?, now()
                FROM generate_series(1, ?) g""", prefix, prefix, provider, failure, state, n);
    }

    static long jobs(TestDatabase db) {
        return db.count("select count(*) from layover.jobs");
    }
}
