package dev.layover.console;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

/**
 * Draws one chart of a {@link TimeSeriesData} window as a standalone SVG document, on the server:
 * no script, no style element or attribute (presentation attributes only), every text escaped, so
 * it works as an {@code <img>} under the console's Content-Security-Policy. Counts are stacked
 * bars per point; 429s, replays and the queue depth are lines over them. Times are in the zone
 * asked for (UTC by default), named on the axis.
 */
final class SvgChart {

    /** The charts the console draws. */
    enum Kind {
        THROUGHPUT("throughput", "Completed"),
        LIMITS("limits", "429s and reschedules"),
        FAILURES("failures", "Retries, parks and replays"),
        DEPTH("depth", "Queue depth (due, waiting)"),
        /** A fallback chain's calls: by endpoint under the job's key, by result under an endpoint's key. */
        CALLS("calls", "Provider calls");

        final String code;
        final String title;

        Kind(String code, String title) {
            this.code = code;
            this.title = title;
        }

        static Kind of(String code) {
            for (Kind k : values()) {
                if (k.code.equals(code)) {
                    return k;
                }
            }
            throw ApiException.badRequest("chart must be one of throughput, limits, failures, depth, calls, was '" + code
                    + "'", "chart");
        }
    }

    static final int WIDTH = 640;
    static final int HEIGHT = 200;
    private static final int LEFT = 48;
    private static final int RIGHT = 630;
    private static final int TOP = 28;
    private static final int BOTTOM = 146;
    private static final String[] COLORS = {
        "#2f5bd3", "#e07b24", "#2e9d5b", "#c43d3d", "#7b4fc9", "#1f9bb0", "#b8a11c", "#8c564b", "#d45fa0", "#6b7280",
    };

    private SvgChart() {}

    static String draw(TimeSeriesData d, Kind kind) {
        return draw(d, kind, ZoneOffset.UTC);
    }

    static String draw(TimeSeriesData d, Kind kind, ZoneId zone) {
        List<TimeSeriesData.Series> bars;
        List<TimeSeriesData.Series> lines;
        switch (kind) {
            case THROUGHPUT -> {
                bars = d.of("completed");
                lines = List.of();
            }
            case LIMITS -> {
                bars = d.of("rescheduled");
                lines = d.of("rate_limited");
            }
            case FAILURES -> {
                bars = d.of("retried", "parked");
                lines = d.of("replayed");
            }
            case CALLS -> {
                // an endpoint's calls by result; else (a chain's model key) its calls by endpoint
                List<TimeSeriesData.Series> byResult = d.of("endpoint_call");
                bars = byResult.isEmpty() ? d.of("chain_call") : byResult;
                lines = List.of();
            }
            default -> {
                bars = List.of();
                lines = d.of("due", "waiting");
            }
        }
        int n = d.starts().size();
        long max = 1;
        for (int i = 0; i < n; i++) {
            long stack = 0;
            for (TimeSeriesData.Series s : bars) {
                stack += s.values()[i];
            }
            max = Math.max(max, stack);
        }
        for (TimeSeriesData.Series s : lines) {
            max = Math.max(max, s.max());
        }
        max = nice(max);
        double slot = (double) (RIGHT - LEFT) / n;
        StringBuilder b = new StringBuilder(8192);
        String summary = kind.title + ", " + label(d) + ": " + totals(bars, lines);
        b.append("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ").append(WIDTH).append(' ').append(HEIGHT)
                .append("\" width=\"").append(WIDTH).append("\" height=\"").append(HEIGHT)
                .append("\" role=\"img\" aria-label=\"").append(esc(summary)).append("\" font-family=\"sans-serif\">");
        b.append("<title>").append(esc(summary)).append("</title>");
        b.append("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>");
        b.append(text(LEFT, 16, 14, "#1d2433", "start", kind.title + "  ·  " + label(d)));
        // grid and axes
        b.append(line(LEFT, BOTTOM, RIGHT, BOTTOM, "#c9ced6"));
        b.append(line(LEFT, TOP, RIGHT, TOP, "#eef0f3"));
        b.append(line(LEFT, (TOP + BOTTOM) / 2.0, RIGHT, (TOP + BOTTOM) / 2.0, "#eef0f3"));
        b.append(text(LEFT - 6, TOP + 4, 11, "#667085", "end", Long.toString(max)));
        b.append(text(LEFT - 6, (TOP + BOTTOM) / 2.0 + 4, 11, "#667085", "end", half(max)));
        b.append(text(LEFT - 6, BOTTOM + 4, 11, "#667085", "end", "0"));
        DateTimeFormatter f = DateTimeFormatter.ofPattern(
                (long) d.stepSeconds() * n > 86_400 ? "MM-dd HH:mm" : "HH:mm", Locale.ROOT).withZone(zone);
        Instant end = d.starts().get(n - 1).plusSeconds(d.stepSeconds());
        b.append(text(LEFT, BOTTOM + 14, 11, "#667085", "start", f.format(d.starts().get(0))));
        b.append(text((LEFT + RIGHT) / 2.0, BOTTOM + 14, 11, "#667085", "middle", f.format(d.starts().get(n / 2))));
        b.append(text(RIGHT, BOTTOM + 14, 11, "#667085", "end", f.format(end) + " " + zoneName(zone, end)));

        int color = 0;
        double scale = (BOTTOM - TOP) / (double) max;
        double[] base = new double[n];
        double barWidth = Math.max(1, slot * 0.8);
        for (TimeSeriesData.Series s : bars) {
            String c = COLORS[color++ % COLORS.length];
            b.append("<g fill=\"").append(c).append("\" data-series=\"").append(esc(s.label())).append("\">");
            for (int i = 0; i < n; i++) {
                long v = s.values()[i];
                if (v == 0) {
                    continue;
                }
                double h = v * scale;
                double y = BOTTOM - base[i] - h;
                b.append("<rect x=\"").append(fmt(LEFT + i * slot + (slot - barWidth) / 2)).append("\" y=\"").append(fmt(y))
                        .append("\" width=\"").append(fmt(barWidth)).append("\" height=\"").append(fmt(h)).append("\">")
                        .append("<title>").append(esc(s.label() + " " + f.format(d.starts().get(i)) + ": " + v))
                        .append("</title></rect>");
                base[i] += h;
            }
            b.append("</g>");
        }
        for (TimeSeriesData.Series s : lines) {
            String c = COLORS[color++ % COLORS.length];
            StringBuilder pts = new StringBuilder();
            for (int i = 0; i < n; i++) {
                pts.append(fmt(LEFT + i * slot + slot / 2)).append(',').append(fmt(BOTTOM - s.values()[i] * scale)).append(' ');
            }
            b.append("<polyline fill=\"none\" stroke=\"").append(c).append("\" stroke-width=\"2\" data-series=\"")
                    .append(esc(s.label())).append("\" points=\"").append(pts.toString().strip()).append("\"/>");
        }
        if (bars.isEmpty() && lines.isEmpty()) {
            b.append(text((LEFT + RIGHT) / 2.0, (TOP + BOTTOM) / 2.0 - 8, 12, "#667085", "middle",
                    "nothing counted in this window"));
        }
        // legend: what each color is, with its total over the window
        double x = LEFT;
        double y = BOTTOM + 34;
        color = 0;
        int shown = 0;
        List<TimeSeriesData.Series> all = new java.util.ArrayList<>(bars);
        all.addAll(lines);
        for (TimeSeriesData.Series s : all) {
            String c = COLORS[color++ % COLORS.length];
            String item = s.label() + " " + (TimeSeriesData.gauge(s.counter()) ? "max " + s.max() : s.total());
            double w = 18 + Math.min(item.length(), 40) * 6.6;
            if (x + w > RIGHT) {
                x = LEFT;
                y += 15;
            }
            if (y > HEIGHT - 4) {
                b.append(text(RIGHT, HEIGHT - 4, 11, "#667085", "end", "+" + (all.size() - shown) + " more"));
                break;
            }
            b.append("<rect x=\"").append(fmt(x)).append("\" y=\"").append(fmt(y - 9)).append("\" width=\"10\" height=\"10\" fill=\"")
                    .append(c).append("\"/>");
            b.append(text(x + 14, y, 11, "#1d2433", "start", item.length() > 40 ? item.substring(0, 39) + "…" : item));
            x += w + 8;
            shown++;
        }
        b.append("</svg>");
        return b.toString();
    }

    /** UTC, or the zone's short name at that instant (CET, EDT) with its offset when it has no letters. */
    static String zoneName(ZoneId zone, Instant at) {
        if (zone.normalized().equals(ZoneOffset.UTC)) {
            return "UTC";
        }
        String s = DateTimeFormatter.ofPattern("zzz", Locale.ROOT).withZone(zone).format(at);
        return s.matches("[A-Za-z]{2,5}") ? s : "UTC" + DateTimeFormatter.ofPattern("xxx", Locale.ROOT).withZone(zone).format(at);
    }

    private static String label(TimeSeriesData d) {
        int s = d.stepSeconds();
        return "per " + (s % 3600 == 0 ? s / 3600 + " h" : s % 60 == 0 ? s / 60 + " min" : s + " s");
    }

    private static String totals(List<TimeSeriesData.Series> bars, List<TimeSeriesData.Series> lines) {
        StringBuilder t = new StringBuilder();
        for (TimeSeriesData.Series s : bars) {
            t.append(t.length() == 0 ? "" : ", ").append(s.label()).append(' ').append(s.total());
        }
        for (TimeSeriesData.Series s : lines) {
            t.append(t.length() == 0 ? "" : ", ").append(s.label()).append(' ')
                    .append(TimeSeriesData.gauge(s.counter()) ? "max " + s.max() : Long.toString(s.total()));
        }
        return t.length() == 0 ? "nothing counted" : t.toString();
    }

    /** 1, 2, 5 times a power of ten, at least {@code v}. */
    static long nice(long v) {
        long p = 1;
        while (true) {
            for (long m : new long[] {1, 2, 5}) {
                if (m * p >= v) {
                    return m * p;
                }
            }
            p *= 10;
        }
    }

    private static String half(long max) {
        return max % 2 == 0 ? Long.toString(max / 2) : String.format(Locale.ROOT, "%.1f", max / 2.0);
    }

    private static String line(double x1, double y1, double x2, double y2, String color) {
        return "<line x1=\"" + fmt(x1) + "\" y1=\"" + fmt(y1) + "\" x2=\"" + fmt(x2) + "\" y2=\"" + fmt(y2)
                + "\" stroke=\"" + color + "\" stroke-width=\"1\"/>";
    }

    private static String text(double x, double y, int size, String color, String anchor, String s) {
        return "<text x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" font-size=\"" + size + "\" fill=\"" + color
                + "\" text-anchor=\"" + anchor + "\">" + esc(s) + "</text>";
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    /** Text as XML character data or attribute value: markup escaped, characters XML 1.0 refuses replaced. */
    static String esc(String s) {
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> b.append("&amp;");
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> {
                    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0xFFFE || c == 0xFFFF
                            || (Character.isSurrogate(c) && !(Character.isHighSurrogate(c) && i + 1 < s.length()
                                    && Character.isLowSurrogate(s.charAt(i + 1))) && !(Character.isLowSurrogate(c)
                                    && i > 0 && Character.isHighSurrogate(s.charAt(i - 1))))) {
                        b.append('\uFFFD');
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.toString();
    }
}
