export * from './request.js'
export * from './catalogue.js'
