/**
 * The `<ACTION>`/`<OBSERVATION>` tool protocol (seed 003 §3–§4) for models without native function
 * calling: an adapter that wraps the chat client, and the pure parsing and formatting beneath it.
 */
export { XmlToolProtocolModel, type XmlToolProtocolOptions } from './xml-tool-protocol-model.js';
export { ActionScanner, scanReply, type ScannedAction, type ScannedReply } from './action-scanner.js';
export { parseActionBody, type ActionInput, type ActionParse, type ParsedAction } from './action-parser.js';
export { toToolArguments, jsonInputProblems } from './action-inputs.js';
export { formatAction, cdata } from './action-format.js';
export {
  ACTION_FORMAT_ERROR,
  actionFormatObservation,
  failureObservation,
  observationBlock,
  observedFailure,
  readToolMessage,
  successObservation,
  type ObservedFailure,
  type ToolMessageOutcome,
} from './observation-format.js';
export { ToolCatalogue, type CatalogueTool } from './tool-catalogue.js';
export { toolCataloguePrompt } from './tool-catalogue-prompt.js';
export { toXmlConversation } from './xml-conversation.js';
