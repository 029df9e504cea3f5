export * from './request.js'
export * from './catalogue.js'
export * from './engine.js'
