package dev.layover.samples;

import dev.layover.samples.translate.DemoReport;
import dev.layover.samples.translate.TranslationDemo;
import java.io.Console;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The LLM translation demo (the README's first command): documents are translated through a fake
 * OpenAI-compatible provider that goes normal → throttled → outage → recovered, with the replay
 * console up and a live progress line; it ends within about two minutes with a report. See
 * {@link TranslationDemo} and {@code docs/demo.md}.
 *
 * <pre>
 * --jdbc-url URL   a running Postgres (or LAYOVER_JDBC_URL); default: an embedded one
 * --fast           the same story in a few seconds
 * --keep-running   keep Layover and the console up after the report, until Ctrl-C
 * --no-console     do not start the replay console
 * </pre>
 */
public final class Demo {

    private static final List<String> FLAGS = List.of("--fast", "--keep-running", "--no-console");

    private Demo() {}

    /**
     * @param args see the class description
     * @throws Exception if the demo cannot run
     */
    public static void main(String[] args) throws Exception {
        List<String> a = List.of(args);
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--jdbc-url")) {
                i++;
            } else if (!FLAGS.contains(args[i])) {
                System.err.println("unknown argument " + args[i] + "; known: --jdbc-url URL, " + String.join(", ", FLAGS));
                System.exit(2);
            }
        }
        boolean keepRunning = a.contains("--keep-running");
        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch cleanedUp = new CountDownLatch(1);
        if (keepRunning) {
            // Ctrl-C: let main stop Layover, the console and the embedded Postgres before the JVM exits
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                stop.countDown();
                try {
                    cleanedUp.await(15, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "demo-shutdown"));
        }
        DemoReport report;
        try (SampleDatabase db = SampleDatabase.open(args, 24)) {
            System.out.println("Layover translation demo on " + db.description());
            report = TranslationDemo.run(db.dataSource(), new TranslationDemo.Options(a.contains("--fast"), keepRunning,
                    !a.contains("--no-console"), isTerminal(), stop, db.jdbcUrl()), System.out);
        } finally {
            cleanedUp.countDown();
        }
        if (!keepRunning) {
            System.exit(report.problems().isEmpty() ? 0 : 1);
        }
    }

    /** Whether stdout is a terminal (then the progress line is redrawn in place). */
    static boolean isTerminal() {
        Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            // Java 22+: System.console() may exist when stdout is redirected; isTerminal tells
            return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
        } catch (ReflectiveOperationException e) {
            return true;
        }
    }
}
