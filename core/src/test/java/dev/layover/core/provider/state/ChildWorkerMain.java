package dev.layover.core.provider.state;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.net.URI;
import java.time.Duration;

/**
 * A Layover worker in its own JVM for {@link TwoProcessesTest}: runs job type {@code chat} (provider
 * key from the arguments), whose handler calls the fake provider. Runs until killed.
 *
 * <p>Arguments: JDBC URL, fake provider URL, provider key, worker name.
 */
public final class ChildWorkerMain {

    /** The args of a {@code chat} job. */
    public record Chat(String text) {}

    private ChildWorkerMain() {}

    /** The job type both processes register. */
    static JobType<Chat> chatType(String key, URI url, Runnable onCall) {
        return JobType.builder("chat", Chat.class)
                .providerKey(key)
                .handler((args, ctx) -> {
                    onCall.run();
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
        cfg.setMaximumPoolSize(10);
        HikariDataSource ds = new HikariDataSource(cfg);
        Layover layover = Layover.builder(ds)
                .register(chatType(args[2], URI.create(args[1]), () -> { }))
                .workerName(args[3])
                .threads(2)
                .pollInterval(Duration.ofMillis(50))
                .start();
        System.out.println("started " + args[3]);
        JvmProcess.runUntilKilled();
        layover.stop();
    }
}
