package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.PureTest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The README's outcome table says what {@code Outcome.Kind} does: one row per kind, and each row's
 * attempt, reschedule and park columns as the kind states them. A new kind, or a changed effect,
 * fails here until the README says it.
 */
@PureTest
class ReadmeOutcomesTest {

    /** The factory a README row starts with, and the kind it makes. */
    private static final Map<String, Outcome.Kind> FACTORIES = Map.of(
            "done", Outcome.Kind.DONE,
            "snooze", Outcome.Kind.SNOOZE,
            "rateLimited", Outcome.Kind.RATE_LIMITED,
            "quotaExhausted", Outcome.Kind.QUOTA_EXHAUSTED,
            "overloaded", Outcome.Kind.OVERLOADED,
            "transientFailure", Outcome.Kind.TRANSIENT,
            "retry", Outcome.Kind.RETRY,
            "authRefused", Outcome.Kind.AUTH_REFUSED,
            "rejected", Outcome.Kind.REJECTED,
            "park", Outcome.Kind.PARK);

    /** A row of the table: | `factory(..)`... | attempt | reschedule | effect | parks as |. */
    private static final Pattern ROW = Pattern.compile(
            "(?m)^\\| `(\\w+)\\([^|]*\\|\\s*([^|]*?)\\s*\\|\\s*([^|]*?)\\s*\\|[^|]*\\|\\s*([^|]*?)\\s*\\|\\s*$");
    private static final Pattern PARKS_AS = Pattern.compile("^`(\\w+)`(, at once)?");

    @Test
    void everyKindHasTheRowItsEffectsSay() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        String table = readme.substring(readme.indexOf("| outcome | attempt spent |"));
        table = table.substring(0, table.indexOf("\n\n"));
        Map<Outcome.Kind, String> rows = new EnumMap<>(Outcome.Kind.class);
        List<String> wrong = new ArrayList<>();
        Matcher m = ROW.matcher(table);
        while (m.find()) {
            Outcome.Kind kind = FACTORIES.get(m.group(1));
            if (kind == null) {
                wrong.add("`" + m.group(1) + "(..)`: no outcome factory of that name");
                continue;
            }
            rows.put(kind, m.group());
            check(wrong, kind, "attempt spent", yes(m.group(2)), kind.spendsAttempt());
            check(wrong, kind, "reschedules + 1", yes(m.group(3)), kind.countsReschedule());
            Matcher p = PARKS_AS.matcher(m.group(4));
            String parksAs = p.find() ? p.group(1) : null;
            check(wrong, kind, "parks as", parksAs, kind.parksAs() == null ? null : kind.parksAs().code());
            check(wrong, kind, "parks at once", parksAs != null && p.group(2) != null, kind.parksAtOnce());
        }
        assertEquals(EnumSet.allOf(Outcome.Kind.class), rows.keySet(), "one README row per Outcome.Kind");
        assertTrue(wrong.isEmpty(), () -> "README.md's outcome table differs from Outcome.Kind:\n  "
                + String.join("\n  ", wrong));
    }

    private static boolean yes(String cell) {
        return cell.replace("*", "").strip().equals("yes");
    }

    private static void check(List<String> wrong, Outcome.Kind kind, String column, Object readme, Object code) {
        if (readme == null ? code != null : !readme.equals(code)) {
            wrong.add(kind + " " + column + ": README says " + readme + ", Outcome.Kind " + code);
        }
    }
}
