package dev.layover.core.provider;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * A table of provider rules: the words, statuses and headers that decide how an error response is
 * read, in the versioned tab-separated format of Layover's own table
 * ({@value #RESOURCE}, shipped in {@code dev/layover/core/provider/}; its format is described at its
 * top and in {@code docs/provider-classification.md}).
 *
 * <pre>{@code
 * ProviderRules gateway = ProviderRules.parse("gateway-rules", """
 *         #! layover-provider-rules 1
 *         match	*	429	message~quota of the month	QUOTA_EXHAUSTED	wait
 *         wait	*	x-gw-retry-at	rfc3339
 *         detect	OPENROUTER	header:x-gw-upstream=openrouter
 *         """);
 * ProviderClassifier classifier = ProviderClassifier.builder().rules(gateway).build();
 * }</pre>
 *
 * An application's rows are tried before the built-in ones ({@link ProviderClassifier.Builder#rules}),
 * so a gateway of its own is read as it documents itself, without a Layover release. Rows may use
 * the built-in table's named lists ({@code token=@rate}, {@code message~@money}).
 *
 * <table>
 *   <caption>row kinds, columns separated by tabs</caption>
 *   <tr><th>kind</th><th>columns</th><th>meaning</th></tr>
 *   <tr><td>{@code set}</td><td>name, values</td><td>a named list, {@code @name} in a when column</td></tr>
 *   <tr><td>{@code detect}</td><td>provider, when</td><td>a response for which the conditions hold comes
 *       from that provider (applied when the hint is {@code OPENAI}, {@code UNKNOWN} or absent)</td></tr>
 *   <tr><td>{@code wait}</td><td>provider, header, form, [remaining header]</td><td>the header states the
 *       wait in that form ({@code seconds}, {@code millis}, {@code http-date}, {@code rfc3339},
 *       {@code duration}, {@code number}, {@code auto}, {@code structured})</td></tr>
 *   <tr><td>{@code match}</td><td>provider, status, when, class, [reset]</td><td>a response for which all
 *       hold is of that class</td></tr>
 * </table>
 *
 * <p>Immutable and thread-safe. A table that cannot be read is refused whole, with an
 * {@link InvalidRulesException} naming the source, the line and what is wrong with it.
 */
public final class ProviderRules {

    /** The format version this Layover reads; the first line of a table must say it. */
    public static final int VERSION = 1;

    /** The built-in table's resource name, next to this class. */
    public static final String RESOURCE = "rules-v1.tsv";

    /** The first line of every table. */
    public static final String VERSION_LINE = "#! layover-provider-rules " + VERSION;

    private static final ProviderRules EMPTY = new ProviderRules("none", List.of(), List.of(), List.of(), Map.of());

    private static volatile ProviderRules builtIn;

    private final String source;
    private final List<Row.Match> matches;
    private final List<Row.Detect> detects;
    private final List<Row.Wait> waits;
    private final Map<String, List<String>> sets;

    private ProviderRules(String source, List<Row.Match> matches, List<Row.Detect> detects, List<Row.Wait> waits,
            Map<String, List<String>> sets) {
        this.source = source;
        this.matches = List.copyOf(matches);
        this.detects = List.copyOf(detects);
        this.waits = List.copyOf(waits);
        this.sets = Map.copyOf(sets);
    }

    /**
     * Layover's own table, {@value #RESOURCE}, read once.
     *
     * @return the built-in rules
     * @throws IllegalStateException when the resource is missing from the class path (a broken jar)
     */
    public static ProviderRules builtIn() {
        ProviderRules b = builtIn;
        if (b == null) {
            synchronized (ProviderRules.class) {
                b = builtIn;
                if (b == null) {
                    try (InputStream in = ProviderRules.class.getResourceAsStream(RESOURCE)) {
                        if (in == null) {
                            throw new IllegalStateException("the built-in provider rules " + RESOURCE
                                    + " are missing from the class path");
                        }
                        b = read(RESOURCE, new String(in.readAllBytes(), StandardCharsets.UTF_8), null);
                    } catch (IOException e) {
                        throw new IllegalStateException("the built-in provider rules cannot be read", e);
                    }
                    builtIn = b;
                }
            }
        }
        return b;
    }

    /** @return a table without rows (the default for an application's rules) */
    public static ProviderRules empty() {
        return EMPTY;
    }

    /**
     * Reads a table from text.
     *
     * @param source a name for error messages, e.g. the file it came from
     * @param text the table: the version line, then rows
     * @return the rules
     * @throws InvalidRulesException when a line cannot be read, naming it
     */
    public static ProviderRules parse(String source, String text) {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(text, "text");
        return read(source, text, builtIn());
    }

    /**
     * Reads a table from a UTF-8 file.
     *
     * @param file the file
     * @return the rules
     * @throws IOException when the file cannot be read
     * @throws InvalidRulesException when a line cannot be read, naming it
     */
    public static ProviderRules load(Path file) throws IOException {
        return parse(file.toString(), Files.readString(file, StandardCharsets.UTF_8));
    }

    /**
     * The rows of this table followed by those of another.
     *
     * @param later the rules tried after these
     * @return a new table
     */
    public ProviderRules and(ProviderRules later) {
        Objects.requireNonNull(later, "later");
        if (later.size() == 0) {
            return this;
        }
        if (size() == 0) {
            return later;
        }
        Map<String, List<String>> s = new LinkedHashMap<>(later.sets);
        s.putAll(sets);
        return new ProviderRules(source + " + " + later.source, concat(matches, later.matches),
                concat(detects, later.detects), concat(waits, later.waits), s);
    }

    /** @return where the table came from */
    public String source() {
        return source;
    }

    /** @return how many match, detect and wait rows it holds */
    public int size() {
        return matches.size() + detects.size() + waits.size();
    }

    @Override
    public String toString() {
        return "ProviderRules[" + source + ": " + matches.size() + " match, " + detects.size() + " detect, "
                + waits.size() + " wait rows]";
    }

    List<Row.Match> matches() {
        return matches;
    }

    List<Row.Detect> detects() {
        return detects;
    }

    List<Row.Wait> waits() {
        return waits;
    }

    /**
     * A table that cannot be read: which source, which line and what is wrong with it.
     */
    public static final class InvalidRulesException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        /** Where the table came from. */
        private final String source;
        /** The 1-based line number. */
        private final int line;

        InvalidRulesException(String source, int line, String problem, String text) {
            super(source + " line " + line + ": " + problem + (text == null ? "" : ": " + abbreviate(text)));
            this.source = source;
            this.line = line;
        }

        /** @return where the table came from */
        public String source() {
            return source;
        }

        /** @return the 1-based number of the line that cannot be read */
        public int line() {
            return line;
        }

        private static String abbreviate(String s) {
            String t = s.replace('\t', '→');
            return t.length() <= 160 ? t : t.substring(0, 160) + "...";
        }
    }

    // ---- reading -------------------------------------------------------------------------------

    private static ProviderRules read(String source, String text, ProviderRules base) {
        String[] lines = text.split("\r\n|\n|\r", -1);
        int first = 0;
        while (first < lines.length && lines[first].isBlank()) {
            first++;
        }
        if (first == lines.length || !lines[first].strip().equals(VERSION_LINE)) {
            throw new InvalidRulesException(source, Math.min(first, lines.length - 1) + 1,
                    "a table starts with the line '" + VERSION_LINE + "' (the format version this Layover reads)",
                    first < lines.length ? lines[first] : null);
        }
        Map<String, List<String>> sets = new LinkedHashMap<>();
        List<Row.Match> matches = new ArrayList<>();
        List<Row.Detect> detects = new ArrayList<>();
        List<Row.Wait> waits = new ArrayList<>();
        for (int i = first + 1; i < lines.length; i++) {
            String line = lines[i];
            if (line.isBlank() || line.stripLeading().startsWith("#")) {
                continue;
            }
            Reader r = new Reader(source, i + 1, line, sets, base == null ? Map.of() : base.sets);
            String[] cols = line.strip().split("\t+", -1);
            switch (cols[0]) {
                case "set" -> r.set(cols);
                case "match" -> matches.add(r.match(cols));
                case "detect" -> detects.add(r.detect(cols));
                case "wait" -> waits.add(r.waitRow(cols));
                default -> throw r.bad("unknown row kind '" + cols[0] + "' (set, detect, wait, match; columns are"
                        + " separated by tabs)");
            }
        }
        return new ProviderRules(source, matches, detects, waits, sets);
    }

    /** Reads the columns of one line, and says what is wrong with it. */
    private static final class Reader {
        private final String source;
        private final int number;
        private final String line;
        private final Map<String, List<String>> sets;
        private final Map<String, List<String>> baseSets;

        Reader(String source, int number, String line, Map<String, List<String>> sets,
                Map<String, List<String>> baseSets) {
            this.source = source;
            this.number = number;
            this.line = line;
            this.sets = sets;
            this.baseSets = baseSets;
        }

        InvalidRulesException bad(String problem) {
            return new InvalidRulesException(source, number, problem, line);
        }

        void columns(String[] cols, int min, int max, String layout) {
            if (cols.length < min || cols.length > max) {
                throw bad("a " + cols[0] + " row has " + layout + " (tab-separated), found " + (cols.length - 1)
                        + " column" + (cols.length == 2 ? "" : "s"));
            }
        }

        void set(String[] cols) {
            columns(cols, 3, 3, "2 columns: name, values");
            String name = cols[1];
            if (!name.matches("[a-z0-9][a-z0-9_-]{0,40}")) {
                throw bad("a set name is lower-case letters, digits, '-' and '_', was '" + name + "'");
            }
            if (sets.containsKey(name)) {
                throw bad("set '" + name + "' is defined twice");
            }
            sets.put(name, values(cols[2]));
        }

        Row.Match match(String[] cols) {
            columns(cols, 5, 6, "4 or 5 columns: provider, status, when, class, [reset]");
            Set<Provider> providers = providers(cols[1]);
            Row.Statuses statuses = statuses(cols[2]);
            List<Row.Condition> when = when(cols[3]);
            FailureClass cls = failureClass(cols[4]);
            Row.Reset reset = cols.length > 5 ? reset(cols[5], cls) : Row.Reset.WAIT;
            return new Row.Match(source + ":" + number, providers, statuses, when, cls, reset);
        }

        Row.Detect detect(String[] cols) {
            columns(cols, 3, 3, "2 columns: provider, when");
            Set<Provider> providers = providers(cols[1]);
            if (providers == null || providers.size() != 1) {
                throw bad("a detect row names one provider, was '" + cols[1] + "'");
            }
            List<Row.Condition> when = when(cols[2]);
            if (when.isEmpty()) {
                throw bad("a detect row needs a condition");
            }
            return new Row.Detect(providers.iterator().next(), when);
        }

        Row.Wait waitRow(String[] cols) {
            columns(cols, 4, 5, "3 or 4 columns: provider, header, form, [remaining header]");
            Set<Provider> providers = providers(cols[1]);
            String header = headerName(cols[2]);
            Row.Form form;
            try {
                form = Row.Form.valueOf(cols[3].toUpperCase(Locale.ROOT).replace('-', '_'));
            } catch (IllegalArgumentException e) {
                throw bad("unknown wait form '" + cols[3] + "' (" + Arrays.stream(Row.Form.values())
                        .map(f -> f.name().toLowerCase(Locale.ROOT).replace('_', '-')).collect(Collectors.joining(", "))
                        + ")");
            }
            String remaining = cols.length > 4 && !cols[4].equals("-") ? headerName(cols[4]) : null;
            return new Row.Wait(providers, header, form, remaining);
        }

        String headerName(String s) {
            if (!s.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")) {
                throw bad("'" + s + "' is not a header name");
            }
            return s;
        }

        Set<Provider> providers(String s) {
            if (s.equals("*")) {
                return null;
            }
            Set<Provider> out = EnumSet.noneOf(Provider.class);
            for (String name : s.split(",")) {
                try {
                    out.add(Provider.valueOf(name.strip()));
                } catch (IllegalArgumentException e) {
                    throw bad("unknown provider '" + name.strip() + "' (" + Arrays.stream(Provider.values())
                            .map(Enum::name).collect(Collectors.joining(", ")) + ", or *)");
                }
            }
            return out;
        }

        Row.Statuses statuses(String s) {
            if (s.equals("*")) {
                return null;
            }
            List<int[]> ranges = new ArrayList<>();
            for (String part : s.split(",")) {
                String p = part.strip();
                int dash = p.indexOf('-');
                int from;
                int to;
                try {
                    from = Integer.parseInt(dash < 0 ? p : p.substring(0, dash));
                    to = dash < 0 ? from : Integer.parseInt(p.substring(dash + 1));
                } catch (NumberFormatException e) {
                    throw bad("'" + p + "' is not a status or a range such as 500-599");
                }
                if (from < 0 || to > 999 || from > to) {
                    throw bad("status range '" + p + "' is not within 0-999");
                }
                ranges.add(new int[] {from, to});
            }
            return new Row.Statuses(ranges);
        }

        FailureClass failureClass(String s) {
            try {
                return FailureClass.valueOf(s);
            } catch (IllegalArgumentException e) {
                throw bad("unknown class '" + s + "' (" + Arrays.stream(FailureClass.values()).map(Enum::name)
                        .collect(Collectors.joining(", ")) + ")");
            }
        }

        Row.Reset reset(String s, FailureClass cls) {
            if (s.equals("-")) {
                return Row.Reset.WAIT;
            }
            Row.Reset r;
            try {
                r = Row.Reset.valueOf(s.toUpperCase(Locale.ROOT).replace('-', '_'));
            } catch (IllegalArgumentException e) {
                throw bad("unknown reset '" + s + "' (wait, pacific-midnight, utc-midnight, next-monday-utc, next-month-utc)");
            }
            if (cls != FailureClass.QUOTA_EXHAUSTED) {
                throw bad("a reset is for QUOTA_EXHAUSTED rows only, this row is " + cls);
            }
            return r;
        }

        List<Row.Condition> when(String s) {
            if (s.equals("-")) {
                return List.of();
            }
            List<Row.Condition> out = new ArrayList<>();
            for (String part : s.split("&")) {
                String c = part.strip();
                if (c.isEmpty()) {
                    throw bad("an empty condition around '&'");
                }
                out.add(condition(c));
            }
            return out;
        }

        Row.Condition condition(String c) {
            if (c.equals("stream")) {
                return new Row.Stream();
            }
            if (c.startsWith("header:")) {
                String rest = c.substring("header:".length());
                int op = firstOf(rest, '=', '~');
                String name = op < 0 ? rest : rest.substring(0, op);
                if (!name.matches("[A-Za-z0-9!#$%&'+.^_`|~-]{1,100}\\*?")) {
                    throw bad("'" + name + "' is not a header name (a trailing '*' makes it a prefix)");
                }
                if (op < 0) {
                    return new Row.Header(name, null, List.of());
                }
                return new Row.Header(name, rest.charAt(op), values(rest.substring(op + 1)));
            }
            int op = firstOf(c, '=', '~');
            if (op <= 0) {
                throw bad("a condition is FIELD=VALUES, FIELD~VALUES, header:NAME or stream, was '" + c + "'");
            }
            String field = c.substring(0, op).strip();
            char o = c.charAt(op);
            List<String> values = values(c.substring(op + 1));
            switch (field) {
                case "token", "type", "code", "error-status", "reason" -> {
                    if (o != '=') {
                        throw bad("'" + field + "' is compared with '=' (one of the tokens), was '" + c + "'");
                    }
                    return new Row.Token(field, Set.copyOf(values));
                }
                case "message", "quota-id" -> {
                    if (o != '~') {
                        throw bad("'" + field + "' is compared with '~' (contains one of), was '" + c + "'");
                    }
                    return field.equals("message") ? new Row.Words(values) : new Row.QuotaId(values);
                }
                default -> throw bad("unknown field '" + field
                        + "' (token, type, code, error-status, reason, message, quota-id, header:NAME, stream)");
            }
        }

        List<String> values(String s) {
            List<String> out = new ArrayList<>();
            for (String v : s.split("\\|")) {
                String t = v.strip().toLowerCase(Locale.ROOT);
                if (t.isEmpty()) {
                    throw bad("an empty value in '" + s + "'");
                }
                if (t.startsWith("@")) {
                    List<String> named = sets.containsKey(t.substring(1)) ? sets.get(t.substring(1))
                            : baseSets.get(t.substring(1));
                    if (named == null) {
                        throw bad("unknown set '" + t + "' (define it with a set row above)");
                    }
                    out.addAll(named);
                } else {
                    out.add(t);
                }
            }
            return List.copyOf(out);
        }

        private static int firstOf(String s, char a, char b) {
            int i = s.indexOf(a);
            int j = s.indexOf(b);
            return i < 0 ? j : j < 0 ? i : Math.min(i, j);
        }
    }

    private static <T> List<T> concat(List<T> a, List<T> b) {
        List<T> out = new ArrayList<>(a.size() + b.size());
        out.addAll(a);
        out.addAll(b);
        return out;
    }
}
