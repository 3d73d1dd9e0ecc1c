package dev.layover.samples.translate;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The demo's live output: one progress line, redrawn in place ({@code \r}) on a terminal and
 * printed as a new line every few seconds otherwise, with event lines (phases, breakers) printed
 * above it. Thread-safe.
 */
final class Progress {

    private final PrintStream out;
    private final boolean terminal;
    private final long everyNanos;
    private final int width;
    private String line = "";
    private int drawn;
    private long printedAt;

    Progress(PrintStream out, boolean terminal, long everyMillis) {
        this.out = out;
        this.terminal = terminal;
        this.everyNanos = everyMillis * 1_000_000L;
        this.width = terminal ? terminalWidth() : Integer.MAX_VALUE;
        this.printedAt = System.nanoTime();
    }

    /** Prints an event on a line of its own. */
    synchronized void event(String text) {
        if (terminal) {
            clear();
            out.println(text);
            draw();
        } else {
            out.println(text);
        }
        out.flush();
    }

    /** Sets the progress line: redrawn at once on a terminal, printed every few seconds otherwise. */
    synchronized void update(String text) {
        line = text;
        if (terminal) {
            clear();
            draw();
        } else if (System.nanoTime() - printedAt >= everyNanos) {
            out.println(text);
            printedAt = System.nanoTime();
        }
        out.flush();
    }

    /** Ends the progress line (before the report). */
    synchronized void finish() {
        if (terminal && drawn > 0) {
            out.println();
            drawn = 0;
        } else if (!terminal && !line.isEmpty()) {
            out.println(line);
        }
        out.flush();
    }

    private void clear() {
        if (drawn > 0) {
            out.print('\r');
            out.print(" ".repeat(drawn));
            out.print('\r');
            drawn = 0;
        }
    }

    private void draw() {
        // a line longer than the terminal wraps, and \r would then redraw only its last part
        String s = line.length() > width ? line.substring(0, width - 3) + "..." : line;
        out.print(s);
        drawn = s.length();
    }

    /** COLUMNS when the shell exports it, else what {@code stty size} says, else 120. */
    private static int terminalWidth() {
        try {
            return Math.max(40, Integer.parseInt(System.getenv().getOrDefault("COLUMNS", "")) - 1);
        } catch (NumberFormatException notSet) {
            // ask the terminal
        }
        try {
            Process p = new ProcessBuilder("sh", "-c", "stty size < /dev/tty").redirectErrorStream(true).start();
            if (p.waitFor(1, TimeUnit.SECONDS) && p.exitValue() == 0) {
                String[] rowsCols = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim().split("\\s+");
                return Math.max(40, Integer.parseInt(rowsCols[1]) - 1);
            }
            p.destroy();
        } catch (IOException | RuntimeException e) {
            // no sh or no tty (Windows): the default
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 119;
    }
}
