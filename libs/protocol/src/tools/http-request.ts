// Vocabulary shared by every HTTP-executed tool format: methods, where arguments go, templated URLs.
import { z } from 'zod';

export const HttpMethod = z.enum(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
export type HttpMethod = z.infer<typeof HttpMethod>;

/** Seed 000 `param_placement`: where all of the model's arguments go. */
export const ParamPlacement = z.enum(['query', 'body', 'path']);
export type ParamPlacement = z.infer<typeof ParamPlacement>;

/** Where one argument goes, for tools imported from OpenAPI (finer than `param_placement`). */
export const ArgumentLocation = z.enum(['path', 'query', 'header', 'cookie', 'body']);
export type ArgumentLocation = z.infer<typeof ArgumentLocation>;

/** How one argument of an imported OpenAPI operation goes into the request (see @agentmesh/openapi). */
export const OpenApiArgumentBinding = z.object({
  property: z.string().min(1),
  in: ArgumentLocation,
  /** The name in its location; absent when the argument is the whole body. */
  name: z.string().min(1).optional(),
  required: z.boolean(),
  style: z.string().optional(),
  explode: z.boolean().optional(),
  allowReserved: z.boolean().optional(),
  contentType: z.string().optional(),
  file: z.boolean().optional(),
});

/**
 * The request side of an operation imported from OpenAPI: method, path template (appended to the
 * tool's `url`), argument bindings and body encoding. With it, an HTTP tool places every argument
 * exactly as the document says (several locations, renamed collisions, styles), which seed 000's
 * single `param_placement` cannot describe. Plain data, in @agentmesh/openapi's `RequestTemplate` form.
 */
export const OpenApiRequestTemplate = z.object({
  method: z.string().min(1).optional(),
  path: z.string().optional(),
  arguments: z.array(OpenApiArgumentBinding),
  body: z
    .object({
      contentType: z.string().min(1),
      kind: z.enum(['json', 'form', 'multipart', 'text', 'binary']),
      required: z.boolean(),
      whole: z.boolean(),
    })
    .optional(),
  nullAsAbsent: z.unknown().optional(),
});
export type OpenApiRequestTemplate = z.infer<typeof OpenApiRequestTemplate>;

const PATH_TEMPLATE = /\{[^{}/]+\}/g;

function isHttpUrlTemplate(value: string): boolean {
  try {
    const url = new URL(value.replace(PATH_TEMPLATE, 'x'));
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** An absolute http(s) URL that may hold `{name}` path templates (seed 000 `param_placement: path`). */
export const HttpUrlTemplate = z
  .string()
  .regex(/^https?:\/\/\S+$/i, 'must be an absolute http(s) URL')
  .refine(isHttpUrlTemplate, 'must be an absolute http(s) URL (path templates like {id} allowed)');

/** A plain absolute http(s) URL. */
export const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' });
