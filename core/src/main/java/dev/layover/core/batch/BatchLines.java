package dev.layover.core.batch;

import java.util.List;
import java.util.Objects;

/** Checks the transports share; refers to no SDK, so either transport loads without the other's SDK. */
final class BatchLines {

    private BatchLines() {}

    /** @throws IllegalArgumentException for no lines or more than {@code max} */
    static void check(List<BatchLine> lines, int max) {
        Objects.requireNonNull(lines, "lines");
        if (lines.isEmpty()) {
            throw new IllegalArgumentException("a batch needs at least one line");
        }
        if (lines.size() > max) {
            throw new IllegalArgumentException("a batch takes at most " + max + " lines, was " + lines.size());
        }
    }

    /** The first 200 characters of a line, for an error message. */
    static String abbreviate(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }
}
