/**
 * Descriptors of the metrics the service knows by name. A metric that is not listed here is
 * still a column (`metrics/<name>`, a floating point number) with a neutral descriptor.
 */

export interface MetricDescriptor {
  label: string;
  description: string;
  data_type: "floating_point" | "integer";
  group_label: string;
  data_unit?: string;
  roll_up_method?: string;
  threshold?: { buckets: number[]; display_value_levels: string[]; inverted: boolean };
}

/**
 * A Map, not an object literal: metric names come from clients, and a plain object would answer
 * `constructor` or `toString` with what its prototype holds.
 */
const KNOWN_METRICS: ReadonlyMap<string, MetricDescriptor> = new Map(Object.entries({
  toxicity: {
    label: "Toxicity",
    description: "Likelihood that the output contains toxic language.",
    data_type: "floating_point",
    group_label: "Safety Metrics",
    data_unit: "percentage",
    roll_up_method: "average",
    threshold: { buckets: [0.5, 0.8], display_value_levels: ["Low", "Medium", "High"], inverted: true },
  },
  duration_ns: {
    label: "Latency",
    description: "Duration of the record in nanoseconds.",
    data_type: "integer",
    group_label: "System Metrics",
    data_unit: "nano_seconds",
    roll_up_method: "average",
  },
  num_input_tokens: { label: "Input Tokens", description: "Number of input tokens.", data_type: "integer", group_label: "System Metrics", roll_up_method: "sum" },
  num_output_tokens: { label: "Output Tokens", description: "Number of output tokens.", data_type: "integer", group_label: "System Metrics", roll_up_method: "sum" },
  num_total_tokens: { label: "Total Tokens", description: "Number of input and output tokens.", data_type: "integer", group_label: "System Metrics", roll_up_method: "sum" },
  time_to_first_token_ns: {
    label: "Time to First Token",
    description: "Time until the first token of the response, in nanoseconds.",
    data_type: "integer",
    group_label: "System Metrics",
    data_unit: "nano_seconds",
    roll_up_method: "average",
  },
  cost: { label: "Cost", description: "Cost of the call in US dollars.", data_type: "floating_point", group_label: "System Metrics", data_unit: "dollars", roll_up_method: "sum" },
} satisfies Record<string, MetricDescriptor>));

/** A metric the service knows by name (it may not have a value on a run yet). */
export function isKnownMetric(name: string): boolean {
  return KNOWN_METRICS.has(name);
}

export function metricDescriptor(name: string): MetricDescriptor {
  return (
    KNOWN_METRICS.get(name) ?? {
      label: name,
      description: `Metric ${name}.`,
      data_type: "floating_point",
      group_label: "Metrics",
      roll_up_method: "average",
    }
  );
}

export const METRIC_COLUMN_PREFIX = "metrics/";
