package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobContext;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.StepOptions;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.Provider;
import dev.layover.testing.JvmProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One worker JVM of the steps benchmark ({@link StepsBench}): a Layover worker running jobs of
 * {@code calls} provider calls each against the fake provider, every call a step (mode
 * {@code steps}) or the same handler without steps (mode {@code plain}: each run starts over).
 *
 * <p>Each successful call appends one line {@code <job> <call> <tokens> <worker>} to the call log
 * (one unbuffered {@code write} per line in append mode: what the kernel has survives the JVM's
 * kill -9), from which the parent counts the calls made twice and their tokens.
 *
 * <p>Arguments: mode, JDBC URL, fake provider URL (OpenAI chat), worker name, threads, provider
 * key, calls per job, call log, stop file, poll interval in ms, heartbeat interval in ms. Prints
 * {@code ready} when it can work (the parent enqueues); when the stop file exists it prints one
 * line {@code RESULT runs=...} and exits.
 */
public final class StepsWorker {

    /** The args of a job: its number. */
    public record Args(int n) {}

    private static final AtomicLong RUNS = new AtomicLong();

    private StepsWorker() {}

    /**
     * The job type of an arm; the parent registers the same one to enqueue.
     *
     * @param steps whether every call is a step
     * @param key the provider key (each step is admitted by it)
     * @param calls provider calls per job
     * @param url the fake provider's OpenAI chat endpoint, or null for an enqueue-only client
     * @param log the call log, or null for an enqueue-only client
     * @return the job type, named {@code steps-with} or {@code steps-without}
     */
    static JobType<Args> type(boolean steps, String key, int calls, URI url, FileChannel log) {
        return JobType.builder(typeName(steps), Args.class)
                .providerKey(key)
                .policy(JobPolicy.defaults().withMaxAttempts(10).withMaxReschedules(100_000)
                        .withMaxDeferral(Duration.ofHours(1)).withBackoff(Duration.ofMillis(200), Duration.ofSeconds(5)))
                .handler((a, ctx) -> {
                    RUNS.incrementAndGet();
                    for (int i = 0; i < calls; i++) {
                        int call = i;
                        if (steps) {
                            ctx.step(StepOptions.named("call-" + i).providerKey(key), Long.class,
                                    () -> call(url, log, a.n(), call, ctx));
                        } else {
                            call(url, log, a.n(), call, ctx);
                        }
                    }
                    return Outcome.done();
                })
                .build();
    }

    /**
     * @param steps the arm
     * @return the arm's job type name
     */
    static String typeName(boolean steps) {
        return steps ? "steps-with" : "steps-without";
    }

    /** One call; its tokens when it succeeds (logged), else its failure thrown as Layover's outcome. */
    private static long call(URI url, FileChannel log, int job, int call, JobContext ctx) throws Exception {
        HttpResponse<String> r;
        try {
            r = ChatClient.send(url, "job " + job + " call " + call);
        } catch (IOException noAnswer) {
            throw ChatClient.noResponse(dev.layover.testing.provider.FakeProvider.Api.OPENAI_CHAT, noAnswer)
                    .toOutcome().toException();
        }
        Optional<Classification> failure = ChatClient.classify(r);
        if (failure.isPresent()) {
            throw failure.get().toOutcome().toException();
        }
        long tokens = ctx.reportUsage(Provider.OPENAI, r.body()).map(u -> u.totalTokens()).orElse(0L);
        ByteBuffer line = ByteBuffer.wrap((job + " " + call + " " + tokens + " " + WORKER + "\n").getBytes(StandardCharsets.UTF_8));
        synchronized (log) {
            while (line.hasRemaining()) {
                log.write(line);
            }
        }
        return tokens;
    }

    private static volatile String WORKER = "?";

    /**
     * @param args see the class description
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        boolean steps = switch (args[0]) {
            case "steps" -> true;
            case "plain" -> false;
            default -> throw new IllegalArgumentException("mode: steps or plain, was " + args[0]);
        };
        String jdbcUrl = args[1];
        URI url = URI.create(args[2]);
        String name = args[3];
        int threads = Integer.parseInt(args[4]);
        String key = args[5];
        int calls = Integer.parseInt(args[6]);
        Path logFile = Path.of(args[7]);
        Path stop = Path.of(args[8]);
        Duration poll = Duration.ofMillis(Long.parseLong(args[9]));
        Duration heartbeat = Duration.ofMillis(Long.parseLong(args[10]));
        WORKER = name;

        try (FileChannel log = FileChannel.open(logFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND)) {
            HikariConfig cfg = new HikariConfig();
            cfg.setJdbcUrl(jdbcUrl);
            cfg.setMaximumPoolSize(threads + 6);
            cfg.setPoolName(name);
            HikariDataSource pool = new HikariDataSource(cfg);
            Layover layover = Layover.builder(pool)
                    .register(type(steps, key, calls, url, log))
                    .threads(threads)
                    .workerName(name)
                    .pollInterval(poll)
                    .heartbeat(heartbeat, 8)
                    .migrate(false)
                    .shutdownMaxWait(Duration.ofSeconds(2))
                    .start();
            System.out.println("ready " + name);
            while (!Files.exists(stop)) {
                Thread.sleep(20);
            }
            System.out.println("RESULT runs=" + RUNS.get());
            System.out.flush();
            layover.stop();
            pool.close();
        }
        System.exit(0);
    }
}
