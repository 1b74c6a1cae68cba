/** The library API: everything needed to embed the contest system in another daemon. */
export type { Bus, BusStatus, Unsubscribe } from './bus/bus.js';
export { LocalBus } from './bus/local-bus.js';
export { BusServer, type BusServerOptions } from './bus/ws-server.js';
export { BusClient, BusClientError, type BusClientOptions } from './bus/ws-client.js';
export {
  createMessage,
  decodeFrame,
  encodeMessage,
  forward,
  reply,
  response,
  type Json,
  type JsonObject,
  type Message,
  type DecodeResult,
  type FrameDropReason,
} from './bus/message.js';
export { readSession, sessionFromObject, resolveLang, type SessionView, type SessionResult } from './bus/session.js';
export { systemClock, type Clock } from './clock/clock.js';
export { ManualClock } from './clock/manual-clock.js';
export { DEFAULT_CONFIG, PIPELINE_ALIASES, type Config, type FallbackMode, type GateConfig, type PriorityRange } from './config/defaults.js';
export { ConfigError, formatConfigError, loadConfig, validateConfig, mergeConfig, configHelp, configWarnings, type ConfigWarning, type ConfigWarningReason } from './config/config.js';
export { describeMycroftReport, type CliOptions, type LoadConfigOptions, type MycroftReport } from './config/config.js';
export { discoverMycroftConf, mycroftConfLocations, mycroftLayer, parseMycroftConf, type MycroftConfText, type MycroftLayer, type MycroftNote, type MycroftOrigin } from './config/mycroft-conf.js';
export { classify, topics, type DropReason, type Inbound } from './dialect/spec-dialect.js';
export { createLogger, silentLogger, type Logger } from './log/logger.js';
export { Orchestrator } from './orchestrator/orchestrator.js';
export { isWellFormedMatch, matchRequest, type Match, type MatchRequest, type MatchRequestInput, type PipelineStage, type IntentListing } from './pipeline/plugin.js';
export { FallbackPlugin } from './plugins/fallback/fallback.plugin.js';
export { FallbackRegistry } from './plugins/fallback/registry.js';
export { buildPool, type PoolInput, type PoolEntry } from './plugins/fallback/pool.js';
export { CommonQueryPlugin } from './plugins/common-query/common-query.plugin.js';
export { classifyQuestion, type GateVerdict } from './plugins/common-query/gate.js';
export { select, selectWithReranker, survivors, fastWinner, rankSurvivors, type Reranker, type Survivor, type SelectionPolicy, type CandidateResponse } from '../machines/common-query/selection.js';
export { Supervisor, type InspectionHook, type ContestInfo, type ContestResult, type SupervisorObserver, type Drop } from './supervisor/supervisor.js';
export { createContestSystem, type ContestSystem, type SystemOptions } from './system.js';
export { startDaemon, type Daemon } from './daemon/daemon.js';
export { runFallbackSkill, type FallbackSkillSpec } from './skills/fallback-skill.js';
export { runCommonQuerySkill, type CommonQuerySkillSpec } from './skills/common-query-skill.js';
export { toMermaid, toDot } from './inspect/diagram.js';
export {
  InspectorRecorder,
  createRecordedSystem,
  type RecorderOptions,
  type UtteranceView,
  type ContestView,
  type DecisionView,
  type TimelineEntry,
  type StrayDrop,
} from './inspect/recorder.js';
export { InspectorServer, systemView, type InspectorServerOptions, type InspectorState, type FeedMessage, type SystemView, type RegistryRow } from './inspect/server.js';
export { fallbackMachine } from '../machines/fallback/fallback.machine.js';
export { commonQueryMachine } from '../machines/common-query/common-query.machine.js';
export { utteranceMachine } from '../machines/utterance/utterance.machine.js';
