package dev.layover.core.admission;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.admission.Admission.Task;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.FakeChat;
import dev.layover.testing.JvmProcess;
import java.net.URI;

/**
 * A Layover worker in its own JVM for {@link ConcurrencyLimitTest}: job type {@code limited}
 * (provider key {@code fake:primary}, concurrency limit from the arguments) whose handler calls the
 * fake provider, or, for args {@code "hold"}, holds its slot forever. Runs until killed.
 *
 * <p>Arguments: JDBC URL, fake provider URL, concurrency limit, worker name.
 */
public final class LimitWorkerMain {

    static final String KEY = "fake:primary";

    private LimitWorkerMain() {}

    static JobType<Task> limitedType(URI url, Runnable onCall) {
        return JobType.builder("limited", Task.class)
                .providerKey(KEY)
                .handler((args, ctx) -> {
                    onCall.run();
                    if (args.text().equals("hold")) {
                        System.out.println("holding the slot");
                        Thread.sleep(Long.MAX_VALUE);
                    }
                    System.out.println("calling the provider for " + args.text());
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
        Layover layover = Admission.builder(ds, args[3])
                .register(limitedType(URI.create(args[1]), () -> { }))
                .concurrencyLimit(KEY, Integer.parseInt(args[2]))
                .threads(2).prefetch(1) // fewer threads than ConcurrencyLimitTest's limit of 3: both JVMs fill it
                .start();
        System.out.println("started " + args[3]);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
