package dev.layover.console;

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
    static final String TOKEN = "test-token-0123456789abcdef";

    /** A job type named {@code work} whose handler runs {@code handler}. */
    static JobType<Work> work(JobHandler<Work> handler) {
        return JobType.builder("work", Work.class)
                .policy(JobPolicy.defaults().withMaxAttempts(3).withBackoff(Duration.ofMillis(1), Duration.ofMillis(5)))
                .providerKey(a -> "test:provider")
                .handler(handler)
                .build();
    }

    /** A job type named {@code work} whose handler does nothing. */
    static JobType<Work> work() {
        return work((args, ctx) -> null);
    }

    /** Small thread pool, fast polling. */
    static Layover.Builder layover(TestDatabase db, JobType<?>... types) {
        return Layover.builder(db.dataSource())
                .register(types)
                .threads(2)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5));
    }

    static ConsoleOptions options() {
        return ConsoleOptions.defaults().withToken(TOKEN);
    }

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

        /** Inserts it with two attempt errors: a timeout, then the last error. */
        long insert(TestDatabase db) {
            return ((Number) db.value("""
                    INSERT INTO layover.dead_letters
                        (job_type, job_id, args, provider_key, failure_type, error_class, error_message, errors,
                         attempts, first_enqueued_at, parked_at, state, state_changed_at)
                    VALUES (?, ?, ?::jsonb, ?, ?, ?, ?,
                            jsonb_build_array(
                                jsonb_build_object('attempt', 1, 'at', '2025-01-01T10:00:00Z', 'kind', 'transient',
                                    'error_class', 'java.net.SocketTimeoutException', 'message', 'read timed out'),
                                jsonb_build_object('attempt', 2, 'at', '2025-01-01T10:00:05Z', 'kind', 'transient',
                                    'error_class', ?::text, 'message', ?::text)),
                            2, ?, ?, ?, ?)
                    RETURNING id""",
                    jobType, jobId, args, providerKey, failureType, errorClass, errorMessage, errorClass,
                    errorMessage, Timestamp.from(parkedAt), Timestamp.from(parkedAt), state,
                    Timestamp.from(parkedAt))).longValue();
        }
    }
}
