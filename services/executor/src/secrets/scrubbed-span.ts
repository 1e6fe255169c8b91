/**
 * A span whose every piece of text passes a filter before the SDK gets it: name, string attributes,
 * event names and attributes, link attributes, the status message and recorded exceptions. The executor
 * makes all its spans through this (gen-ai-spans.ts), with the filter of the open vaults, so nothing set
 * on a span while a task runs carries one of its secrets, whatever exporter the OTEL_* variables choose
 * (the SDK builds those exporters' processors itself and offers no place to wrap them).
 */
import type {
  Attributes,
  AttributeValue,
  Exception,
  Link,
  Span,
  SpanContext,
  SpanStatus,
  TimeInput,
} from '@opentelemetry/api';

export type TextFilter = (text: string) => string;

export class ScrubbedSpan implements Span {
  constructor(
    private readonly span: Span,
    private readonly filter: TextFilter,
  ) {}

  spanContext(): SpanContext {
    return this.span.spanContext();
  }

  setAttribute(key: string, value: AttributeValue): this {
    this.span.setAttribute(key, scrubValue(value, this.filter));
    return this;
  }

  setAttributes(attributes: Attributes): this {
    this.span.setAttributes(scrubAttributes(attributes, this.filter));
    return this;
  }

  addEvent(name: string, attributesOrStartTime?: Attributes | TimeInput, startTime?: TimeInput): this {
    const attributes = isAttributes(attributesOrStartTime)
      ? scrubAttributes(attributesOrStartTime, this.filter)
      : attributesOrStartTime;
    this.span.addEvent(this.filter(name), attributes, startTime);
    return this;
  }

  addLink(link: Link): this {
    this.span.addLink(this.#link(link));
    return this;
  }

  addLinks(links: Link[]): this {
    this.span.addLinks(links.map((link) => this.#link(link)));
    return this;
  }

  setStatus(status: SpanStatus): this {
    const { message } = status;
    this.span.setStatus(message === undefined ? status : { ...status, message: this.filter(message) });
    return this;
  }

  updateName(name: string): this {
    this.span.updateName(this.filter(name));
    return this;
  }

  end(endTime?: TimeInput): void {
    this.span.end(endTime);
  }

  isRecording(): boolean {
    return this.span.isRecording();
  }

  recordException(exception: Exception, time?: TimeInput): void {
    this.span.recordException(this.#exception(exception), time);
  }

  #link(link: Link): Link {
    return link.attributes === undefined
      ? link
      : { ...link, attributes: scrubAttributes(link.attributes, this.filter) };
  }

  #exception(exception: Exception): Exception {
    if (typeof exception === 'string') return this.filter(exception);
    const scrubbed: Exclude<Exception, string> = { name: this.filter(exception.name ?? 'Error') };
    if (exception.message !== undefined) scrubbed.message = this.filter(exception.message);
    if (exception.stack !== undefined) scrubbed.stack = this.filter(exception.stack);
    if (exception.code !== undefined) {
      scrubbed.code = typeof exception.code === 'string' ? this.filter(exception.code) : exception.code;
    }
    return scrubbed;
  }
}

export function scrubAttributes(attributes: Attributes, filter: TextFilter): Attributes {
  const scrubbed: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== undefined) scrubbed[key] = scrubValue(value, filter);
  }
  return scrubbed;
}

function scrubValue(value: AttributeValue, filter: TextFilter): AttributeValue {
  if (typeof value === 'string') return filter(value);
  if (Array.isArray(value) && value.some((item) => typeof item === 'string')) {
    return (value as (string | null | undefined)[]).map((item) =>
      typeof item === 'string' ? filter(item) : item,
    );
  }
  return value;
}

function isAttributes(value: Attributes | TimeInput | undefined): value is Attributes {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}
