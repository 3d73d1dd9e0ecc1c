package dev.layover.core.internal.engine;

import dev.layover.core.internal.db.StoredText;
import dev.layover.core.internal.observe.SecretMask;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * A failed attempt's exception as the text stored in its {@code errors} entry ({@code stack_trace}):
 * {@code printStackTrace}'s shape (the exception, its frames, each {@code Caused by:} with the
 * frames it does not share with the exception above it), secrets masked ({@link SecretMask}), at
 * most {@code maxChars} characters. Causes are kept before frames: when the whole trace does not
 * fit, fewer frames per exception are shown, then none, so the {@code Caused by:} lines survive a
 * small cap. Never throws (an exception's {@code getMessage()} may).
 */
final class StackTraces {

    /** The longest cause chain rendered (a longer chain, or a cycle, ends with a note). */
    static final int MAX_CAUSES = 10;

    private static final int[] FRAMES = {12, 4, 1, 0};

    private final int maxChars;

    /** @param maxChars the longest stored trace; 0 stores none */
    StackTraces(int maxChars) {
        this.maxChars = maxChars;
    }

    /** Stores none. */
    static final StackTraces OFF = new StackTraces(0);

    /**
     * @param t the exception of a failed attempt, or null
     * @return its trace, masked and bounded; null when there is no exception or traces are off
     */
    String of(Throwable t) {
        if (t == null || maxChars <= 0) {
            return null;
        }
        try {
            String text = null;
            for (int frames : FRAMES) {
                text = SecretMask.mask(render(t, frames));
                if (text.length() <= maxChars) {
                    break;
                }
            }
            return StoredText.cut(text, maxChars);
        } catch (RuntimeException | StackOverflowError e) {
            return StoredText.cut(SecretMask.mask(Errors.describe(t)), maxChars);
        }
    }

    private static String render(Throwable top, int maxFrames) {
        StringBuilder b = new StringBuilder();
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        StackTraceElement[] enclosing = new StackTraceElement[0];
        Throwable t = top;
        for (int depth = 0; t != null; depth++) {
            if (!seen.add(t)) {
                b.append("[circular reference: ").append(t.getClass().getName()).append("]\n");
                break;
            }
            if (depth == MAX_CAUSES) {
                b.append("[").append("more causes not shown]\n");
                break;
            }
            if (depth > 0) {
                b.append("Caused by: ");
            }
            b.append(headline(t)).append('\n');
            StackTraceElement[] frames = t.getStackTrace();
            int common = depth == 0 ? 0 : inCommon(frames, enclosing);
            int own = frames.length - common;
            int shown = Math.min(own, maxFrames);
            for (int i = 0; i < shown; i++) {
                b.append("\tat ").append(frames[i]).append('\n');
            }
            if (own > shown || common > 0) {
                b.append("\t... ").append(frames.length - shown).append(" more\n");
            }
            enclosing = frames;
            t = t.getCause();
        }
        return b.toString().stripTrailing();
    }

    private static String headline(Throwable t) {
        String m = Errors.safeMessage(t);
        return m == null ? t.getClass().getName() : t.getClass().getName() + ": " + m;
    }

    /** Frames at the bottom of {@code frames} that {@code enclosing} ends with too. */
    private static int inCommon(StackTraceElement[] frames, StackTraceElement[] enclosing) {
        int m = frames.length - 1;
        int n = enclosing.length - 1;
        while (m >= 0 && n >= 0 && frames[m].equals(enclosing[n])) {
            m--;
            n--;
        }
        return frames.length - 1 - m;
    }
}
