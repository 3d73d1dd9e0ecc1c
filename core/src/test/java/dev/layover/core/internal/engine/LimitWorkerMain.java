package dev.layover.core.internal.engine;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.FakeChat;
import dev.layover.testing.JvmProcess;
import java.net.URI;
import java.time.Duration;

/**
 * A worker in its own JVM for {@link PickTwoJvmTest}: runs job type {@code limited} of one provider
 * key, whose handler calls the fake provider, under one limit. Runs until killed.
 *
 * <p>Arguments: JDBC URL, fake provider URL, provider key, worker name, limit ({@code bucket:R}
 * requests a second with a one-second burst, or {@code concurrency:N}).
 */
public final class LimitWorkerMain {

    /** The args of a {@code limited} job. */
    public record Call(String text) {}

    private LimitWorkerMain() {}

    /** The job type both processes register. */
    static JobType<Call> type(String key, URI url) {
        return JobType.builder("limited", Call.class)
                .providerKey(key)
                .handler((args, ctx) -> {
                    FakeChat.complete(url, args.text());
                    return Outcome.done();
                })
                .build();
    }

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(12);
        HikariDataSource ds = new HikariDataSource(cfg);
        String[] limit = args[4].split(":");
        Layover.Builder b = Layover.builder(ds).register(type(args[2], URI.create(args[1]))).workerName(args[3])
                .threads(8).pollInterval(Duration.ofMillis(50));
        if (limit[0].equals("concurrency")) {
            // fewer threads than the limit, none held ahead: the limit is filled only by both JVMs at once (a
            // worker that frees a slot picks again at once and could otherwise keep every slot to itself)
            b.threads(Integer.parseInt(limit[1]) - 1).prefetch(1);
        }
        if (limit[0].equals("bucket")) {
            b.bucket(args[2], BucketSettings.requestsPerSecond(Double.parseDouble(limit[1])).withBurst(Duration.ofSeconds(1)));
        } else {
            b.concurrencyLimit(args[2], Integer.parseInt(limit[1]));
        }
        Layover layover = b.start();
        System.out.println("started " + args[3]);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
